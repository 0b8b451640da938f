package api_test

import (
	"context"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// session/create takes links; a link to a workspace or snapshot the universe
// does not have is refused, and overlapping mounts are invalid.
func TestLinks_SessionCreateChecksLinkedWorkspacesAndSnapshots(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	manifest, err := e.blobs.Put(ctx, []byte(`{"format":"cairn.vfs.snapshot","files":[],"totals":{"bytes":0,"files":0},"version":1}`))
	if err != nil {
		t.Fatal(err)
	}
	snap := api.DigestRef(manifest)
	links := []api.LinkParam{{Mount: "/work", Workspace: "acorn"}, {Mount: "/ref", Snapshot: &snap}}
	_, err = e.c.CreateSession(ctx, api.CreateSessionParams{Model: testModel(), Links: links})
	wantKind(t, err, core.RejectUnknownReference)

	if _, err := e.log.CreateWorkspace(ctx, "acorn", manifest); err != nil {
		t.Fatal(err)
	}
	_, err = e.c.CreateSession(ctx, api.CreateSessionParams{Model: testModel(), Links: links})
	wantKind(t, err, core.RejectUnknownReference) // the snapshot is not recorded yet
	if _, err := e.log.PutSnapshot(ctx, manifest); err != nil {
		t.Fatal(err)
	}
	created, err := e.c.CreateSession(ctx, api.CreateSessionParams{Model: testModel(), Links: links})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.read(t, created.SessionID); got.Head == 0 {
		t.Fatalf("session not created: %+v", got)
	}
	_, err = e.c.CreateSession(ctx, api.CreateSessionParams{Model: testModel(),
		Links: []api.LinkParam{{Mount: "/work", Workspace: "acorn"}, {Mount: "/work/sub", Workspace: "acorn"}}})
	wantKind(t, err, core.RejectInvalidConfiguration)
}
