package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/store/postgres"
)

// TestWorkspacesAreUniverseScoped: a workspace or snapshot of universe A is
// invisible in universe B, B cannot point a head or snapshot at a blob only
// A has, and the same name lives independently in both.
func TestWorkspacesAreUniverseScoped(t *testing.T) {
	ctx := context.Background()
	db, _ := connect(t)
	a, b := openStore(t, db, "alpha", nil), openStore(t, db, "beta", nil)
	onlyA := mustPut(t, a, []byte("alpha's manifest"))
	if _, err := a.CreateWorkspace(ctx, "main", onlyA); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PutSnapshot(ctx, onlyA); err != nil {
		t.Fatal(err)
	}

	if w, err := b.Workspace(ctx, "main"); !errors.Is(err, store.ErrWorkspaceNotFound) {
		t.Fatalf("beta reads alpha's workspace: %+v, %v", w, err)
	}
	if all, err := b.Workspaces(ctx, "", 0); err != nil || len(all) != 0 {
		t.Fatalf("beta lists %+v, %v; want nothing", all, err)
	}
	if sn, err := b.Snapshot(ctx, onlyA); !errors.Is(err, store.ErrSnapshotNotFound) {
		t.Fatalf("beta reads alpha's snapshot: %+v, %v", sn, err)
	}
	if _, err := b.MoveHead(ctx, "main", 1, onlyA); !errors.Is(err, store.ErrWorkspaceNotFound) {
		t.Fatalf("beta moves alpha's workspace: %v", err)
	}
	var me *blob.MissingError
	if _, err := b.CreateWorkspace(ctx, "main", onlyA); !errors.As(err, &me) {
		t.Fatalf("beta points a head at alpha's blob: %v, want *blob.MissingError", err)
	}
	if _, err := b.PutSnapshot(ctx, onlyA); !errors.As(err, &me) {
		t.Fatalf("beta records alpha's blob as a snapshot: %v, want *blob.MissingError", err)
	}

	// The same name in beta is its own workspace with its own revisions.
	onlyB := mustPut(t, b, []byte("beta's manifest"))
	if _, err := b.CreateWorkspace(ctx, "main", onlyB); err != nil {
		t.Fatal(err)
	}
	if _, err := b.MoveHead(ctx, "main", 1, onlyB); err != nil {
		t.Fatal(err)
	}
	if _, err := b.MoveHead(ctx, "main", 2, onlyA); !errors.As(err, &me) {
		t.Fatalf("beta moves its head to alpha's blob: %v, want *blob.MissingError", err)
	}
	if w, err := a.Workspace(ctx, "main"); err != nil || w.Revision != 1 || w.Head != onlyA {
		t.Fatalf("alpha's main = %+v, %v; want revision 1 at its own head", w, err)
	}
	if w, err := b.Workspace(ctx, "main"); err != nil || w.Revision != 2 || w.Head != onlyB {
		t.Fatalf("beta's main = %+v, %v; want revision 2 at its own head", w, err)
	}
}

// TestWorkspaceHeadsAndSnapshotsHoldTheirManifests checks the constraints a
// collector works against: deleting a blob a head or a snapshot references
// fails; once the head moves away the old manifest can go.
func TestWorkspaceHeadsAndSnapshotsHoldTheirManifests(t *testing.T) {
	ctx := context.Background()
	db, url := connect(t)
	s := openStore(t, db, "default", nil)
	m1, m2, snap := mustPut(t, s, []byte("manifest 1")), mustPut(t, s, []byte("manifest 2")), mustPut(t, s, []byte("snapshot"))
	if _, err := s.CreateWorkspace(ctx, "main", m1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	conn := sql(t, url)
	del := func(d content.Digest) error {
		_, err := conn.Exec(ctx, `DELETE FROM blobs WHERE universe = 'default' AND digest = $1`, d[:])
		return err
	}
	wantHeld := func(what string, d content.Digest) {
		t.Helper()
		if pgErr := (*pgconn.PgError)(nil); !errors.As(del(d), &pgErr) || pgErr.Code != "23503" {
			t.Fatalf("deleting %s: want a foreign key violation", what)
		}
	}
	wantHeld("a head", m1)
	wantHeld("a snapshot", snap)
	if _, err := s.MoveHead(ctx, "main", 1, m2); err != nil {
		t.Fatal(err)
	}
	if err := del(m1); err != nil {
		t.Fatalf("deleting the manifest the head moved away from: %v", err)
	}
	wantHeld("the new head", m2)
}

// TestWorkspacesUseTheStoreClock checks timestamps come from WithNow.
func TestWorkspacesUseTheStoreClock(t *testing.T) {
	ctx := context.Background()
	clock := time.UnixMilli(1_000)
	db, _ := connect(t, postgres.WithNow(func() time.Time { return clock }))
	s := openStore(t, db, "default", nil)
	m := mustPut(t, s, []byte("manifest"))
	w, err := s.CreateWorkspace(ctx, "main", m)
	if err != nil || w.CreatedAtMs != 1_000 || w.UpdatedAtMs != 1_000 {
		t.Fatalf("CreateWorkspace = %+v, %v; want times 1000", w, err)
	}
	clock = time.UnixMilli(2_000)
	if w, err = s.MoveHead(ctx, "main", 1, m); err != nil || w.CreatedAtMs != 1_000 || w.UpdatedAtMs != 2_000 {
		t.Fatalf("MoveHead = %+v, %v; want created 1000, updated 2000", w, err)
	}
	if got, err := s.Workspace(ctx, "main"); err != nil || got != w {
		t.Fatalf("Workspace = %+v, %v; want %+v", got, err, w)
	}
	if sn, err := s.PutSnapshot(ctx, m); err != nil || sn.CreatedAtMs != 2_000 {
		t.Fatalf("PutSnapshot = %+v, %v; want time 2000", sn, err)
	}
}
