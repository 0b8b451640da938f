package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

// workspaces returns the backend's store.Workspaces, found on the log or the
// blob store; backends without workspaces skip these tests.
func (f *fixture) workspaces() store.Workspaces {
	f.t.Helper()
	if w, ok := f.log.(store.Workspaces); ok {
		return w
	}
	if w, ok := f.blobs.(store.Workspaces); ok {
		return w
	}
	f.t.Skip("backend does not store workspaces")
	return nil
}

func (f *fixture) create(ws store.Workspaces, name string, head content.Digest) store.Workspace {
	f.t.Helper()
	w, err := ws.CreateWorkspace(f.ctx, name, head)
	if err != nil {
		f.t.Fatalf("CreateWorkspace(%s): %v", name, err)
	}
	if w.Name != name || w.Revision != 1 || w.Head != head || w.CreatedAtMs <= 0 || w.UpdatedAtMs != w.CreatedAtMs {
		f.t.Fatalf("CreateWorkspace(%s) = %+v, want revision 1 at head %s with positive, equal times", name, w, head)
	}
	return w
}

func (f *fixture) move(ws store.Workspaces, name string, expected int64, head content.Digest) store.Workspace {
	f.t.Helper()
	w, err := ws.MoveHead(f.ctx, name, expected, head)
	if err != nil {
		f.t.Fatalf("MoveHead(%s, %d): %v", name, expected, err)
	}
	if w.Name != name || w.Revision != expected+1 || w.Head != head {
		f.t.Fatalf("MoveHead(%s, %d, %s) = %+v, want revision %d", name, expected, head, w, expected+1)
	}
	return w
}

// wantWorkspace reads name back and compares it with want field by field.
func (f *fixture) wantWorkspace(ws store.Workspaces, want store.Workspace) {
	f.t.Helper()
	got, err := ws.Workspace(f.ctx, want.Name)
	if err != nil {
		f.t.Fatalf("Workspace(%s): %v", want.Name, err)
	}
	if got != want {
		f.t.Fatalf("Workspace(%s) = %+v, want %+v", want.Name, got, want)
	}
}

func (f *fixture) wantNoWorkspace(ws store.Workspaces, name string) {
	f.t.Helper()
	if w, err := ws.Workspace(f.ctx, name); !errors.Is(err, store.ErrWorkspaceNotFound) {
		f.t.Fatalf("Workspace(%s) = %+v, %v; want ErrWorkspaceNotFound", name, w, err)
	}
}

func (f *fixture) wantWorkspaceConflict(err error, name string, expected, actual int64) {
	f.t.Helper()
	var wc *store.WorkspaceConflictError
	if !errors.As(err, &wc) {
		f.t.Fatalf("error %v (%T) is not a *store.WorkspaceConflictError", err, err)
	}
	if !errors.Is(err, store.ErrWorkspaceConflict) {
		f.t.Fatalf("error %v does not match store.ErrWorkspaceConflict", err)
	}
	if wc.Name != name || wc.Expected != expected || wc.Actual != actual {
		f.t.Fatalf("conflict = %+v, want workspace %s expected %d actual %d", *wc, name, expected, actual)
	}
}

func names(ws []store.Workspace) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Name
	}
	return out
}

func testWorkspaceCreateRead(f *fixture) {
	ws := f.workspaces()
	f.wantNoWorkspace(ws, "main")
	h1, h2 := f.put("manifest 1"), f.put("manifest 2")
	created := map[string]store.Workspace{}
	for _, n := range []string{"main", "b", "a.x", "Z-1", "notes_2"} {
		head := h1
		if n == "b" {
			head = h2
		}
		created[n] = f.create(ws, n, head)
	}
	for _, w := range created {
		f.wantWorkspace(ws, w)
	}
	f.wantNoWorkspace(ws, "mai")

	all, err := ws.Workspaces(f.ctx, "", 0)
	if err != nil {
		f.t.Fatalf("Workspaces: %v", err)
	}
	want := []string{"Z-1", "a.x", "b", "main", "notes_2"} // byte order
	if got := names(all); !slices.Equal(got, want) {
		f.t.Fatalf("Workspaces = %q, want %q", got, want)
	}
	for _, w := range all {
		if w != created[w.Name] {
			f.t.Fatalf("listed %+v, want %+v", w, created[w.Name])
		}
	}
	for _, page := range []struct {
		after string
		limit int
		want  []string
	}{
		{"", 2, []string{"Z-1", "a.x"}},
		{"a.x", 2, []string{"b", "main"}},
		{"main", 2, []string{"notes_2"}},
		{"m", 0, []string{"main", "notes_2"}},
		{"notes_2", 5, nil},
	} {
		got, err := ws.Workspaces(f.ctx, page.after, page.limit)
		if err != nil {
			f.t.Fatalf("Workspaces(%q, %d): %v", page.after, page.limit, err)
		}
		if !slices.Equal(names(got), page.want) && !(len(got) == 0 && len(page.want) == 0) {
			f.t.Fatalf("Workspaces(%q, %d) = %q, want %q", page.after, page.limit, names(got), page.want)
		}
	}
}

func testWorkspaceDuplicate(f *fixture) {
	ws := f.workspaces()
	h1, h2 := f.put("manifest 1"), f.put("manifest 2")
	w := f.create(ws, "main", h1)
	if got, err := ws.CreateWorkspace(f.ctx, "main", h2); !errors.Is(err, store.ErrWorkspaceExists) {
		f.t.Fatalf("second CreateWorkspace(main) = %+v, %v; want ErrWorkspaceExists", got, err)
	}
	f.wantWorkspace(ws, w)
}

func testWorkspaceMove(f *fixture) {
	ws := f.workspaces()
	h1, h2, h3 := f.put("manifest 1"), f.put("manifest 2"), f.put("manifest 3")
	w := f.create(ws, "main", h1)
	other := f.create(ws, "other", h1)
	w2 := f.move(ws, "main", 1, h2)
	if w2.CreatedAtMs != w.CreatedAtMs || w2.UpdatedAtMs < w.UpdatedAtMs {
		f.t.Fatalf("moved %+v from %+v: creation time must stay, update time must not go back", w2, w)
	}
	f.wantWorkspace(ws, w2)
	// Moving to the same head is still a move.
	w3 := f.move(ws, "main", 2, h2)
	f.wantWorkspace(ws, w3)
	w4 := f.move(ws, "main", 3, h3)
	f.wantWorkspace(ws, w4)
	f.wantWorkspace(ws, other)
	if got, err := ws.MoveHead(f.ctx, "ghost", 1, h1); !errors.Is(err, store.ErrWorkspaceNotFound) {
		f.t.Fatalf("MoveHead(ghost) = %+v, %v; want ErrWorkspaceNotFound", got, err)
	}
	f.wantNoWorkspace(ws, "ghost")
}

func testWorkspaceStale(f *fixture) {
	ws := f.workspaces()
	h1, h2, h3 := f.put("manifest 1"), f.put("manifest 2"), f.put("manifest 3")
	f.create(ws, "main", h1)
	w := f.move(ws, "main", 1, h2)
	for _, stale := range []int64{1, 0, -1, 3, 7} {
		_, err := ws.MoveHead(f.ctx, "main", stale, h3)
		f.wantWorkspaceConflict(err, "main", stale, 2)
		f.wantWorkspace(ws, w)
	}
	// A stale mover gets the conflict even when its head is absent.
	_, err := ws.MoveHead(f.ctx, "main", 1, content.Sum([]byte("absent")))
	f.wantWorkspaceConflict(err, "main", 1, 2)
	f.wantWorkspace(ws, w)
}

func testWorkspaceConcurrent(f *fixture) {
	ws := f.workspaces()
	f.create(ws, "main", f.put("base"))
	const movers = 8
	heads := make([]content.Digest, movers)
	for i := range heads {
		heads[i] = f.put(fmt.Sprintf("mover %d", i))
	}
	var wg sync.WaitGroup
	results := make([]store.Workspace, movers)
	errs := make([]error, movers)
	for i := range movers {
		wg.Go(func() { results[i], errs[i] = ws.MoveHead(f.ctx, "main", 1, heads[i]) })
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				f.t.Fatalf("movers %d and %d both moved from revision 1", winner, i)
			}
			winner = i
			continue
		}
		f.wantWorkspaceConflict(err, "main", 1, 2)
	}
	if winner < 0 {
		f.t.Fatalf("no mover won: %v", errs)
	}
	if w := results[winner]; w.Revision != 2 || w.Head != heads[winner] {
		f.t.Fatalf("winner got %+v, want revision 2 at its head", w)
	}
	f.wantWorkspace(ws, results[winner])
}

func testWorkspaceMissingHead(f *fixture) {
	ws := f.workspaces()
	absent := content.Sum([]byte("absent"))
	_, err := ws.CreateWorkspace(f.ctx, "main", absent)
	f.wantMissing(err, absent)
	f.wantNoWorkspace(ws, "main")
	if all, err := ws.Workspaces(f.ctx, "", 0); err != nil || len(all) != 0 {
		f.t.Fatalf("Workspaces after a rejected create = %+v, %v; want none", all, err)
	}

	w := f.create(ws, "main", f.put("manifest 1"))
	_, err = ws.MoveHead(f.ctx, "main", 1, absent)
	f.wantMissing(err, absent)
	f.wantWorkspace(ws, w)

	// Once the blob exists, the same requests succeed.
	f.put("absent")
	f.move(ws, "main", 1, absent)
	f.create(ws, "second", absent)
}

func testWorkspaceInvalid(f *fixture) {
	ws := f.workspaces()
	head := f.put("manifest")
	longest := strings.Repeat("a", store.MaxWorkspaceNameLen)
	for _, bad := range []string{"", longest + "b", "a/b", "a b", "ü", "main\x00", "../x", "a:b"} {
		if _, err := ws.CreateWorkspace(f.ctx, bad, head); !errors.Is(err, store.ErrInvalidWorkspace) {
			f.t.Fatalf("CreateWorkspace(%q) = %v, want ErrInvalidWorkspace", bad, err)
		}
		if _, err := ws.MoveHead(f.ctx, bad, 1, head); !errors.Is(err, store.ErrInvalidWorkspace) {
			f.t.Fatalf("MoveHead(%q) = %v, want ErrInvalidWorkspace", bad, err)
		}
	}
	if _, err := ws.CreateWorkspace(f.ctx, "main", content.Digest{}); !errors.Is(err, store.ErrInvalidWorkspace) {
		f.t.Fatalf("CreateWorkspace(zero head) = %v, want ErrInvalidWorkspace", err)
	}
	if all, err := ws.Workspaces(f.ctx, "", 0); err != nil || len(all) != 0 {
		f.t.Fatalf("Workspaces after rejected creates = %+v, %v; want none", all, err)
	}
	for _, good := range []string{longest, "A", "0", ".", "-_.", "release-2.1_final"} {
		f.create(ws, good, head)
	}
	if _, err := ws.MoveHead(f.ctx, "A", 1, content.Digest{}); !errors.Is(err, store.ErrInvalidWorkspace) {
		f.t.Fatalf("MoveHead(zero head) = %v, want ErrInvalidWorkspace", err)
	}
}

func testSnapshots(f *fixture) {
	ws := f.workspaces()
	absent := content.Sum([]byte("absent"))
	if s, err := ws.Snapshot(f.ctx, absent); !errors.Is(err, store.ErrSnapshotNotFound) {
		f.t.Fatalf("Snapshot(unrecorded) = %+v, %v; want ErrSnapshotNotFound", s, err)
	}
	_, err := ws.PutSnapshot(f.ctx, absent)
	f.wantMissing(err, absent)
	if s, err := ws.Snapshot(f.ctx, absent); !errors.Is(err, store.ErrSnapshotNotFound) {
		f.t.Fatalf("Snapshot after a rejected put = %+v, %v; want ErrSnapshotNotFound", s, err)
	}
	if _, err := ws.PutSnapshot(f.ctx, content.Digest{}); !errors.Is(err, store.ErrInvalidWorkspace) {
		f.t.Fatalf("PutSnapshot(zero) = %v, want ErrInvalidWorkspace", err)
	}

	m, other := f.put("manifest"), f.put("other manifest")
	first, err := ws.PutSnapshot(f.ctx, m)
	if err != nil {
		f.t.Fatalf("PutSnapshot: %v", err)
	}
	if first.Manifest != m || first.CreatedAtMs <= 0 {
		f.t.Fatalf("PutSnapshot = %+v, want manifest %s with a positive time", first, m)
	}
	for range 2 {
		again, err := ws.PutSnapshot(f.ctx, m)
		if err != nil || again != first {
			f.t.Fatalf("PutSnapshot again = %+v, %v; want the first record %+v", again, err, first)
		}
	}
	if got, err := ws.Snapshot(f.ctx, m); err != nil || got != first {
		f.t.Fatalf("Snapshot = %+v, %v; want %+v", got, err, first)
	}
	if s, err := ws.Snapshot(f.ctx, other); !errors.Is(err, store.ErrSnapshotNotFound) {
		f.t.Fatalf("Snapshot(other) = %+v, %v; want ErrSnapshotNotFound", s, err)
	}
	// A snapshot and a workspace head may share a manifest.
	f.create(ws, "main", m)
}
