package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/vfs"
)

// upload stores each file's bytes through blobs/put and returns its entry.
func (e *env) upload(t *testing.T, files map[string]string) []vfs.Entry {
	t.Helper()
	var out []vfs.Entry
	for p, data := range files {
		r, err := e.c.PutBlob(bg, []byte(data), vfs.MediaText)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, vfs.Entry{Path: p, Ref: r.Ref, Size: int64(len(data))})
	}
	return out
}

func (e *env) workspace(t *testing.T, name string) api.WorkspaceReadResult {
	t.Helper()
	got, err := e.c.ReadWorkspace(bg, name)
	if err != nil {
		t.Fatalf("vfs/workspaces/read %s: %v", name, err)
	}
	return got
}

// wsUnchanged checks that call fails with kind and leaves the workspace as it was.
func (e *env) wsUnchanged(t *testing.T, name, kind string, call func() error) *api.Error {
	t.Helper()
	before := e.workspace(t, name)
	rpcErr := wantKind(t, call(), kind)
	if after := e.workspace(t, name); after != before {
		t.Fatalf("a refused call (%s) changed workspace %s:\nbefore %+v\nafter  %+v", kind, name, before, after)
	}
	return rpcErr
}

func rev(n int64) *int64 { return &n }

func TestVFS_WorkspaceCreateListReadCommit(t *testing.T) {
	e := newEnv(t)
	created, err := e.c.CreateWorkspace(bg, api.WorkspaceCreateParams{Workspace: "docs"})
	if err != nil {
		t.Fatal(err)
	}
	if created.Workspace != "docs" || created.Revision != 1 || created.Head.Ref.MediaType != vfs.MediaType {
		t.Fatalf("created %+v", created)
	}
	empty, err := vfs.ReadManifest(bg, e.blobs, created.Head.Ref.Digest)
	if err != nil || len(empty.Files) != 0 {
		t.Fatalf("a new workspace's head is %+v (%v), want the empty tree", empty, err)
	}
	e.wsUnchanged(t, "docs", api.KindWorkspaceExists, func() error {
		_, err := e.c.CreateWorkspace(bg, api.WorkspaceCreateParams{Workspace: "docs"})
		return err
	})

	files := e.upload(t, map[string]string{"README.md": "# Docs\n", "guide/intro.txt": "hello\n"})
	committed, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "docs", ExpectedRevision: rev(1), Files: files})
	if err != nil {
		t.Fatal(err)
	}
	if committed.Revision != 2 || committed.Files != 2 || committed.Bytes != 13 {
		t.Fatalf("committed %+v, want revision 2 with 2 files of 13 bytes", committed)
	}
	if got := e.workspace(t, "docs"); got != committed {
		t.Fatalf("read %+v, want the commit's result %+v", got, committed)
	}

	// A stale revision is a conflict naming both revisions; so is 0 (it
	// means "create") on an existing workspace.
	rpcErr := e.wsUnchanged(t, "docs", core.RejectRevisionConflict, func() error {
		_, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "docs", ExpectedRevision: rev(1), Files: []vfs.Entry{}})
		return err
	})
	if d := rpcErr.Data; d.Expected == nil || *d.Expected != 1 || d.Actual == nil || *d.Actual != 2 {
		t.Fatalf("conflict data %+v, want expected 1 and actual 2", d)
	}
	rpcErr = e.wsUnchanged(t, "docs", core.RejectRevisionConflict, func() error {
		_, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "docs", ExpectedRevision: rev(0), Files: []vfs.Entry{}})
		return err
	})
	if d := rpcErr.Data; d.Expected == nil || *d.Expected != 0 || d.Actual == nil || *d.Actual != 2 {
		t.Fatalf("conflict data %+v, want expected 0 and actual 2", d)
	}

	// Commit replaces the whole tree.
	emptied, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "docs", ExpectedRevision: rev(2), Files: files[:1]})
	if err != nil || emptied.Revision != 3 || emptied.Files != 1 {
		t.Fatalf("commit of one file: %+v, %v", emptied, err)
	}
	// Without expectedRevision it lands on the current head, whatever it is.
	restored, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "docs", Files: files})
	if err != nil || restored.Revision != 4 || restored.Files != 2 {
		t.Fatalf("commit without expectedRevision: %+v, %v", restored, err)
	}

	// Commit creates an absent workspace, but not one it expects to exist.
	_, err = e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "other", ExpectedRevision: rev(4), Files: files})
	wantKind(t, err, api.KindNotFound)
	other, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "other", Files: files})
	if err != nil || other.Revision != 1 || other.Files != 2 {
		t.Fatalf("commit creating a workspace: %+v, %v", other, err)
	}

	list, err := e.c.ListWorkspaces(bg, api.WorkspaceListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Workspaces) != 2 || list.Workspaces[0].Workspace != "docs" || list.Workspaces[0].Revision != 4 ||
		list.Workspaces[1].Workspace != "other" || list.Workspaces[0].CreatedAtMs == 0 || list.Workspaces[0].UpdatedAtMs < list.Workspaces[0].CreatedAtMs {
		t.Fatalf("list %+v", list)
	}
	page, err := e.c.ListWorkspaces(bg, api.WorkspaceListParams{After: "docs", Limit: 1})
	if err != nil || len(page.Workspaces) != 1 || page.Workspaces[0].Workspace != "other" {
		t.Fatalf("page after docs: %+v, %v", page, err)
	}
}

// The wire shapes clients depend on.
func TestVFS_WireShapes(t *testing.T) {
	e := newEnv(t)
	if _, err := e.c.CreateWorkspace(bg, api.WorkspaceCreateParams{Workspace: "w"}); err != nil {
		t.Fatal(err)
	}
	resp := e.postOne(t, `{"jsonrpc":"2.0","id":1,"method":"vfs/workspaces/read","params":{"workspace":"w"}}`)
	var got map[string]any
	if err := json.Unmarshal(resp.Result, &got); err != nil {
		t.Fatalf("%v: %s", err, resp.Result)
	}
	ref, _ := got["head"].(map[string]any)["ref"].(map[string]any)
	if got["workspace"] != "w" || got["revision"] != 1.0 || got["files"] != 0.0 || got["bytes"] != 0.0 ||
		ref["mediaType"] != vfs.MediaType || !content.IsDigestString(ref["digest"].(string)) {
		t.Fatalf("vfs/workspaces/read result %s", resp.Result)
	}
	resp = e.postOne(t, `{"jsonrpc":"2.0","id":2,"method":"vfs/files/write","params":{"workspace":"w","path":"a/b.txt","data":"aGk="}}`)
	if resp.Error != nil || !strings.Contains(string(resp.Result), `"revision":2`) {
		t.Fatalf("vfs/files/write: %+v %s", resp.Error, resp.Result)
	}
	resp = e.postOne(t, `{"jsonrpc":"2.0","id":3,"method":"vfs/files/list","params":{"workspace":"w"}}`)
	if want := `{"entries":[{"name":"a","path":"a","dir":true}]}`; string(resp.Result) != want {
		t.Fatalf("vfs/files/list = %s, want %s", resp.Result, want)
	}
	resp = e.postOne(t, `{"jsonrpc":"2.0","id":4,"method":"vfs/files/read","params":{"workspace":"w","path":"a/b.txt"}}`)
	if !strings.Contains(string(resp.Result), `"path":"a/b.txt"`) || !strings.Contains(string(resp.Result), `"size":2,"data":"aGk="`) {
		t.Fatalf("vfs/files/read = %s", resp.Result)
	}
}

func TestVFS_FilesWriteReadList(t *testing.T) {
	e := newEnv(t)
	if _, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w",
		Files: e.upload(t, map[string]string{"a.md": "alpha", "dir/b.txt": "beta"})}); err != nil {
		t.Fatal(err)
	}
	// Without expectedRevision the write lands on the current head.
	wrote, err := e.c.WriteFile(bg, api.FileWriteParams{Workspace: "w", Path: "/dir/c.txt", Data: []byte("gamma")})
	if err != nil || wrote.Revision != 2 {
		t.Fatalf("write: %+v, %v", wrote, err)
	}
	if h := e.workspace(t, "w").Head; h != wrote.Head {
		t.Fatalf("head %+v, write reported %+v", h, wrote.Head)
	}
	// With it, only on that exact revision.
	rpcErr := e.wsUnchanged(t, "w", core.RejectRevisionConflict, func() error {
		_, err := e.c.WriteFile(bg, api.FileWriteParams{Workspace: "w", Path: "a.md", Data: []byte("stale"), ExpectedRevision: rev(1)})
		return err
	})
	if *rpcErr.Data.Expected != 1 || *rpcErr.Data.Actual != 2 {
		t.Fatalf("conflict data %+v", rpcErr.Data)
	}
	if _, err := e.c.WriteFile(bg, api.FileWriteParams{Workspace: "w", Path: "a.md", Data: []byte("ALPHA"), ExpectedRevision: rev(2)}); err != nil {
		t.Fatal(err)
	}

	got, err := e.c.ReadFile(bg, api.FileParams{Workspace: "w", Path: "a.md"})
	if err != nil || string(got.Data) != "ALPHA" || got.Size != 5 || got.Ref.Digest != content.Sum([]byte("ALPHA")) || got.Path != "a.md" {
		t.Fatalf("read a.md: %+v, %v", got, err)
	}
	got, err = e.c.ReadFile(bg, api.FileParams{Workspace: "w", Path: "dir/c.txt"})
	if err != nil || string(got.Data) != "gamma" {
		t.Fatalf("read dir/c.txt: %+v, %v", got, err)
	}
	_, err = e.c.ReadFile(bg, api.FileParams{Workspace: "w", Path: "nope.txt"})
	wantKind(t, err, api.KindNotFound)
	_, err = e.c.ReadFile(bg, api.FileParams{Workspace: "absent", Path: "a.md"})
	wantKind(t, err, api.KindNotFound)
	_, err = e.c.WriteFile(bg, api.FileWriteParams{Workspace: "absent", Path: "a.md", Data: []byte("x")})
	wantKind(t, err, api.KindNotFound)

	root, err := e.c.ListFiles(bg, api.FileParams{Workspace: "w"})
	size := int64(5)
	want := []api.FileListEntry{{Name: "a.md", Path: "a.md", Size: &size}, {Name: "dir", Path: "dir", Dir: true}}
	if err != nil || !reflect.DeepEqual(root.Entries, want) {
		t.Fatalf("list root: %+v, %v", root, err)
	}
	sub, err := e.c.ListFiles(bg, api.FileParams{Workspace: "w", Path: "dir"})
	if err != nil || len(sub.Entries) != 2 || sub.Entries[0].Path != "dir/b.txt" || sub.Entries[1].Path != "dir/c.txt" {
		t.Fatalf("list dir: %+v, %v", sub, err)
	}
	_, err = e.c.ListFiles(bg, api.FileParams{Workspace: "w", Path: "nowhere"})
	wantKind(t, err, api.KindNotFound)
}

func TestVFS_Snapshots(t *testing.T) {
	e := newEnv(t)
	files := e.upload(t, map[string]string{"x/one.txt": "1", "two.txt": "22"})
	committed, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", Files: files})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := e.c.CreateSnapshot(bg, "w")
	if err != nil {
		t.Fatal(err)
	}
	if snap.Snapshot != committed.Head.Ref || snap.Files != 2 || snap.Bytes != 3 {
		t.Fatalf("snapshot %+v of head %+v", snap, committed.Head)
	}
	if _, err := e.log.Snapshot(bg, snap.Snapshot.Digest); err != nil {
		t.Fatalf("snapshot not recorded: %v", err)
	}
	// The workspace moves on; the snapshot keeps its tree.
	if _, err := e.c.WriteFile(bg, api.FileWriteParams{Workspace: "w", Path: "two.txt", Data: []byte("changed")}); err != nil {
		t.Fatal(err)
	}
	read, err := e.c.ReadSnapshot(bg, api.RefOf(snap.Snapshot))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := vfs.NewManifest(files, vfs.Limits{})
	if read.Snapshot != snap.Snapshot || read.FileCount != 2 || read.Bytes != 3 || !reflect.DeepEqual(read.Files, want.Files) {
		t.Fatalf("snapshot read %+v, want files %+v", read, want.Files)
	}
	got, err := e.c.ReadFile(bg, api.FileParams{Snapshot: refp(snap.Snapshot), Path: "two.txt"})
	if err != nil || string(got.Data) != "22" {
		t.Fatalf("read from snapshot: %+v, %v", got, err)
	}
	list, err := e.c.ListFiles(bg, api.FileParams{Snapshot: refp(snap.Snapshot), Path: "x"})
	if err != nil || len(list.Entries) != 1 || list.Entries[0].Path != "x/one.txt" {
		t.Fatalf("list snapshot: %+v, %v", list, err)
	}

	// A workspace can start from a recorded snapshot, not from any blob.
	fork, err := e.c.CreateWorkspace(bg, api.WorkspaceCreateParams{Workspace: "fork", Snapshot: refp(snap.Snapshot)})
	if err != nil || fork.Head.Ref != snap.Snapshot || fork.Revision != 1 {
		t.Fatalf("fork: %+v, %v", fork, err)
	}
	unrecorded := e.workspace(t, "w").Head.Ref
	_, err = e.c.ReadSnapshot(bg, api.RefOf(unrecorded))
	wantKind(t, err, api.KindNotFound)
	_, err = e.c.CreateWorkspace(bg, api.WorkspaceCreateParams{Workspace: "fork2", Snapshot: refp(unrecorded)})
	wantKind(t, err, api.KindNotFound)
	_, err = e.c.CreateSnapshot(bg, "absent")
	wantKind(t, err, api.KindNotFound)
}

func TestVFS_CommitWithMissingBlobsChangesNothing(t *testing.T) {
	e := newEnv(t)
	files := e.upload(t, map[string]string{"kept.txt": "kept"})
	if _, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", Files: files}); err != nil {
		t.Fatal(err)
	}
	usage, err := e.blobs.Usage(bg)
	if err != nil {
		t.Fatal(err)
	}
	ghost := []byte("never uploaded")
	withGhost := append(files, vfs.Entry{Path: "ghost.txt", Ref: content.Ref(ghost, vfs.MediaText, ""), Size: int64(len(ghost))})
	rpcErr := e.wsUnchanged(t, "w", api.KindMissingBlob, func() error {
		_, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", ExpectedRevision: rev(1), Files: withGhost})
		return err
	})
	if want := []string{content.Sum(ghost).String()}; !reflect.DeepEqual(rpcErr.Data.Missing, want) {
		t.Fatalf("missing %v, want %v", rpcErr.Data.Missing, want)
	}
	// Not even a manifest was stored.
	if after, _ := e.blobs.Usage(bg); after != usage {
		t.Fatalf("blob usage %+v, was %+v", after, usage)
	}
	// Nor is a workspace created from missing blobs.
	_, err = e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "new", Files: withGhost})
	wantKind(t, err, api.KindMissingBlob)
	_, err = e.c.ReadWorkspace(bg, "new")
	wantKind(t, err, api.KindNotFound)
}

func TestVFS_BlobsMissing(t *testing.T) {
	e := newEnv(t)
	have, err := e.c.PutBlob(bg, []byte("have"), "")
	if err != nil {
		t.Fatal(err)
	}
	lack := content.Sum([]byte("lack"))
	got, err := e.c.MissingBlobs(bg, []content.Digest{have.Ref.Digest, lack})
	if err != nil || !reflect.DeepEqual(got.Missing, []content.Digest{lack}) {
		t.Fatalf("missing %+v, %v; want only %s", got, err, lack)
	}
	got, err = e.c.MissingBlobs(bg, nil)
	if err != nil || got.Missing == nil || len(got.Missing) != 0 {
		t.Fatalf("missing of nothing: %+v, %v", got, err)
	}
	resp := e.postOne(t, `{"jsonrpc":"2.0","id":1,"method":"blobs/missing","params":{"digests":["sha256:nope"]}}`)
	if resp.Error == nil || resp.Error.Kind() != api.KindInvalidParams {
		t.Fatalf("bad digest: %+v", resp.Error)
	}
	digests := make([]string, api.MaxBlobsMissing+1)
	for i := range digests {
		digests[i] = `"` + lack.String() + `"`
	}
	resp = e.postOne(t, `{"jsonrpc":"2.0","id":2,"method":"blobs/missing","params":{"digests":[`+strings.Join(digests, ",")+`]}}`)
	if resp.Error == nil || resp.Error.Kind() != api.KindInvalidParams {
		t.Fatalf("overlong list: %+v", resp.Error)
	}
}

// Bad input is refused with a typed error and changes nothing.
func TestVFS_BadParams(t *testing.T) {
	e := newEnv(t)
	files := e.upload(t, map[string]string{"a.txt": "a"})
	if _, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", Files: files}); err != nil {
		t.Fatal(err)
	}
	snap, err := e.c.CreateSnapshot(bg, "w")
	if err != nil {
		t.Fatal(err)
	}
	entry := files[0]
	at := func(p string, size int64) vfs.Entry { return vfs.Entry{Path: p, Ref: entry.Ref, Size: size} }
	deep := strings.Repeat("d/", vfs.DefaultMaxDepth) + "f"
	cases := []struct {
		name string
		kind string
		call func() error
	}{
		{"create bad name", api.KindInvalidParams, func() error {
			_, err := e.c.CreateWorkspace(bg, api.WorkspaceCreateParams{Workspace: "bad name"})
			return err
		}},
		{"create bad snapshot", api.KindInvalidParams, func() error {
			return e.c.Call(bg, api.MethodWorkspacesCreate, map[string]any{"workspace": "x", "snapshot": "sha256:xyz"}, nil)
		}},
		{"read bad name", api.KindInvalidParams, func() error { _, err := e.c.ReadWorkspace(bg, "../w"); return err }},
		{"commit no files", api.KindInvalidParams, func() error {
			_, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", ExpectedRevision: rev(1)})
			return err
		}},
		{"commit bad path", api.KindInvalidParams, func() error {
			_, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", ExpectedRevision: rev(1), Files: []vfs.Entry{at("../a.txt", 1)}})
			return err
		}},
		{"commit duplicate path", api.KindInvalidParams, func() error {
			_, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", ExpectedRevision: rev(1), Files: []vfs.Entry{at("a.txt", 1), at("a.txt", 1)}})
			return err
		}},
		{"commit file under a file", api.KindInvalidParams, func() error {
			_, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", ExpectedRevision: rev(1), Files: []vfs.Entry{at("a.txt", 1), at("a.txt/b", 1)}})
			return err
		}},
		{"commit negative revision", api.KindInvalidParams, func() error {
			_, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", ExpectedRevision: rev(-1), Files: files})
			return err
		}},
		{"commit too large a file", api.KindLimitExceeded, func() error {
			_, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", ExpectedRevision: rev(1), Files: []vfs.Entry{at("a.txt", vfs.DefaultMaxFileBytes+1)}})
			return err
		}},
		{"commit too deep", api.KindLimitExceeded, func() error {
			_, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", ExpectedRevision: rev(1), Files: []vfs.Entry{at(deep, 1)}})
			return err
		}},
		{"commit wrong size", api.KindInvalidParams, func() error {
			_, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", ExpectedRevision: rev(1), Files: []vfs.Entry{at("b.txt", 2)}})
			return err
		}},
		{"commit wrong size without expectedRevision", api.KindInvalidParams, func() error {
			_, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", Files: []vfs.Entry{at("a.txt", 1), at("c.txt", 0)}})
			return err
		}},
		{"commit too long a name", api.KindLimitExceeded, func() error {
			_, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", ExpectedRevision: rev(1), Files: []vfs.Entry{at("d/"+strings.Repeat("n", 256), 1)}})
			return err
		}},
		{"write too long a name", api.KindLimitExceeded, func() error {
			_, err := e.c.WriteFile(bg, api.FileWriteParams{Workspace: "w", Path: strings.Repeat("n", 256) + "/f", Data: []byte("x")})
			return err
		}},
		{"write bad path", api.KindInvalidParams, func() error {
			_, err := e.c.WriteFile(bg, api.FileWriteParams{Workspace: "w", Path: "../escape", Data: []byte("x")})
			return err
		}},
		{"write root", api.KindInvalidParams, func() error {
			_, err := e.c.WriteFile(bg, api.FileWriteParams{Workspace: "w", Path: "/", Data: []byte("x")})
			return err
		}},
		{"write under a file", api.KindInvalidParams, func() error {
			_, err := e.c.WriteFile(bg, api.FileWriteParams{Workspace: "w", Path: "a.txt/b", Data: []byte("x")})
			return err
		}},
		{"write too deep", api.KindLimitExceeded, func() error {
			_, err := e.c.WriteFile(bg, api.FileWriteParams{Workspace: "w", Path: deep, Data: []byte("x")})
			return err
		}},
		{"read both", api.KindInvalidParams, func() error {
			_, err := e.c.ReadFile(bg, api.FileParams{Workspace: "w", Snapshot: refp(snap.Snapshot), Path: "a.txt"})
			return err
		}},
		{"read neither", api.KindInvalidParams, func() error {
			_, err := e.c.ReadFile(bg, api.FileParams{Path: "a.txt"})
			return err
		}},
		{"read bad snapshot", api.KindInvalidParams, func() error {
			return e.c.Call(bg, api.MethodFilesRead, map[string]any{"snapshot": "sha256:12", "path": "a.txt"}, nil)
		}},
		{"read bad path", api.KindInvalidParams, func() error {
			_, err := e.c.ReadFile(bg, api.FileParams{Workspace: "w", Path: "a/../../b"})
			return err
		}},
		{"list neither", api.KindInvalidParams, func() error { _, err := e.c.ListFiles(bg, api.FileParams{}); return err }},
		{"list bad path", api.KindInvalidParams, func() error {
			_, err := e.c.ListFiles(bg, api.FileParams{Workspace: "w", Path: "../up"})
			return err
		}},
		{"list ..", api.KindInvalidParams, func() error {
			_, err := e.c.ListFiles(bg, api.FileParams{Workspace: "w", Path: ".."})
			return err
		}},
		{"list /..", api.KindInvalidParams, func() error {
			_, err := e.c.ListFiles(bg, api.FileParams{Workspace: "w", Path: "/.."})
			return err
		}},
		{"list a.txt/..", api.KindInvalidParams, func() error {
			_, err := e.c.ListFiles(bg, api.FileParams{Workspace: "w", Path: "a.txt/.."})
			return err
		}},
		{"list ./a.txt", api.KindInvalidParams, func() error {
			_, err := e.c.ListFiles(bg, api.FileParams{Workspace: "w", Path: "./a.txt"})
			return err
		}},
		{"list x//y", api.KindInvalidParams, func() error {
			_, err := e.c.ListFiles(bg, api.FileParams{Workspace: "w", Path: "x//y"})
			return err
		}},
		{"snapshot read no digest", api.KindInvalidParams, func() error { _, err := e.c.ReadSnapshot(bg, api.RefParam{}); return err }},
		{"snapshot create bad name", api.KindInvalidParams, func() error { _, err := e.c.CreateSnapshot(bg, ""); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { e.wsUnchanged(t, "w", c.kind, c.call) })
	}
	resp := e.postOne(t, `{"jsonrpc":"2.0","id":1,"method":"vfs/workspaces/commit","params":{"workspace":"w","files":[],"extra":1}}`)
	if resp.Error == nil || resp.Error.Kind() != api.KindInvalidParams {
		t.Fatalf("unknown field: %+v", resp.Error)
	}
}

// A host without a workspace store refuses the vfs methods with a typed error.
func TestVFS_UnsupportedWithoutWorkspaces(t *testing.T) {
	blobs := blob.NewMemory()
	log := store.NewMemory(blobs)
	host := local.New(local.Options{Log: log, Blobs: blobs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Executor: &runtime.Executor{Blobs: blobs, Adapters: map[string]provider.Adapter{core.APIChatCompletions: newFakeModel()}}})
	if err := host.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(host.Close)
	srv := httptest.NewServer(api.NewServer(host, api.ServerOptions{APIKinds: []string{core.APIChatCompletions}}).Handler())
	t.Cleanup(srv.Close)
	c := api.NewClient(srv.URL, nil)
	_, err := c.ListWorkspaces(bg, api.WorkspaceListParams{})
	wantKind(t, err, api.KindUnsupported)
	_, err = c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", Files: []vfs.Entry{}})
	wantKind(t, err, api.KindUnsupported)
}

// A commit's sizes are checked against the blobs they name: every reader
// (limits, totals, exports) trusts them.
func TestVFS_CommitChecksEachSize(t *testing.T) {
	e := newEnv(t)
	files := e.upload(t, map[string]string{"a.txt": "abc"})
	if _, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", Files: files}); err != nil {
		t.Fatal(err)
	}
	fresh := e.upload(t, map[string]string{"docs/new.md": "new bytes"})
	for _, bad := range []vfs.Entry{
		{Path: "docs/new.md", Ref: fresh[0].Ref, Size: 1},              // a blob the head does not name
		{Path: "copy.txt", Ref: files[0].Ref, Size: files[0].Size + 1}, // one it names with another size
	} {
		rpcErr := e.wsUnchanged(t, "w", api.KindInvalidParams, func() error {
			_, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", Files: append([]vfs.Entry{files[0]}, bad)})
			return err
		})
		if !strings.Contains(rpcErr.Message, bad.Path) || !strings.Contains(rpcErr.Message, "size") {
			t.Fatalf("the error does not name %s and its size: %s", bad.Path, rpcErr.Message)
		}
	}
	ok, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", Files: append(files, fresh...)})
	if err != nil || ok.Bytes != 12 {
		t.Fatalf("commit with the right sizes: %+v, %v", ok, err)
	}
}
