package vfs

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
)

// fakeHeads keeps workspace heads in memory with revision checks. beforeMove,
// when set, runs before each MoveHead's check, outside the lock, so a test can
// move the head between a writer's read and its move.
type fakeHeads struct {
	mu         sync.Mutex
	heads      map[string]content.Digest
	revs       map[string]int64
	beforeMove func(call int)
	moveCalls  int
}

func newFakeHeads() *fakeHeads {
	return &fakeHeads{heads: map[string]content.Digest{}, revs: map[string]int64{}}
}

func (h *fakeHeads) Head(_ context.Context, ws string) (content.Digest, int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rev, ok := h.revs[ws]
	if !ok {
		return content.Digest{}, 0, fmt.Errorf("fake heads: no workspace %q", ws)
	}
	return h.heads[ws], rev, nil
}

func (h *fakeHeads) MoveHead(_ context.Context, ws string, expected int64, head content.Digest) (int64, error) {
	h.mu.Lock()
	h.moveCalls++
	call, hook := h.moveCalls, h.beforeMove
	h.mu.Unlock()
	if hook != nil {
		hook(call)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if rev := h.revs[ws]; rev != expected {
		return 0, fmt.Errorf("fake heads: %q is at revision %d, not %d: %w", ws, rev, expected, ErrHeadMoved)
	}
	h.revs[ws]++
	h.heads[ws] = head
	return h.revs[ws], nil
}

func (h *fakeHeads) rev(ws string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.revs[ws]
}

// fakeEdges records edges and refuses children missing from blobs, like the
// real edge stores.
type fakeEdges struct {
	blobs blob.Store
	mu    sync.Mutex
	kids  map[content.Digest][]content.Digest
}

func (e *fakeEdges) PutEdges(ctx context.Context, parent content.Digest, children []content.Digest) error {
	miss, err := e.blobs.Missing(ctx, children)
	if err != nil {
		return err
	}
	if len(miss) > 0 {
		return &blob.MissingError{Digests: miss}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.kids[parent] = append([]content.Digest(nil), children...)
	return nil
}

func (e *fakeEdges) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.kids)
}

type testFS struct {
	*FS
	heads *fakeHeads
	edges *fakeEdges
	snap  content.Digest
}

// newTestFS mounts workspace "w" (sampleFiles) at /work and a snapshot of two
// files at /refs/v1.
func newTestFS(t *testing.T) *testFS {
	t.Helper()
	ctx := context.Background()
	blobs := blob.NewMemory()
	edges := &fakeEdges{blobs: blobs, kids: map[content.Digest][]content.Digest{}}
	heads := newFakeHeads()
	work, err := WriteManifest(ctx, blobs, edges, mustBuild(t, blobs, sampleFiles()))
	if err != nil {
		t.Fatal(err)
	}
	heads.heads["w"], heads.revs["w"] = work.Digest, 1
	snap, err := WriteManifest(ctx, blobs, edges, mustBuild(t, blobs, map[string][]byte{
		"spec.md":    []byte("# Spec\nThe notes are final.\n"),
		"data/x.txt": []byte("x marks\nthe spot\n"),
	}))
	if err != nil {
		t.Fatal(err)
	}
	fs := &FS{Blobs: blobs, Edges: edges, Heads: heads, Mounts: []Mount{
		{Path: "/work", Workspace: "w"},
		{Path: "/refs/v1", Snapshot: snap.Digest},
	}}
	return &testFS{FS: fs, heads: heads, edges: edges, snap: snap.Digest}
}

func (f *testFS) read(t *testing.T, p string) string {
	t.Helper()
	data, _, err := f.ReadFile(context.Background(), p)
	if err != nil {
		t.Fatalf("ReadFile(%s): %v", p, err)
	}
	return string(data)
}

func TestFSReadResolvesHeadEachTime(t *testing.T) {
	ctx := context.Background()
	f := newTestFS(t)
	data, e, err := f.ReadFile(ctx, "/work/docs/guide.md")
	if err != nil || string(data) != "Guide\n" || e.Path != "docs/guide.md" {
		t.Fatalf("ReadFile = %q %+v %v", data, e, err)
	}
	if got := f.read(t, "/refs/v1/data/x.txt"); got != "x marks\nthe spot\n" {
		t.Fatalf("snapshot read %q", got)
	}
	// Another session moves the head: the next read sees it.
	other := &FS{Blobs: f.Blobs, Edges: f.Edges, Heads: f.heads, Mounts: []Mount{{Path: "/elsewhere", Workspace: "w"}}}
	if _, err := other.WriteFile(ctx, "/elsewhere/docs/guide.md", []byte("moved\n")); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, "/work/docs/guide.md"); got != "moved\n" {
		t.Fatalf("read after head move: %q", got)
	}

	var nf *NotFoundError
	if _, _, err := f.ReadFile(ctx, "/work/nope.txt"); !errors.As(err, &nf) || nf.Path != "/work/nope.txt" {
		t.Fatalf("missing file: %v", err)
	}
	var wk *WrongKindError
	for _, p := range []string{"/work/docs", "/work", "/", "/refs"} {
		if _, _, err := f.ReadFile(ctx, p); !errors.As(err, &wk) || !wk.IsDir {
			t.Errorf("ReadFile(%s) = %v, want a directory error", p, err)
		}
	}
}

func TestFSPathsMustBeAbsoluteAndClean(t *testing.T) {
	ctx := context.Background()
	f := newTestFS(t)
	for p, reason := range map[string]string{
		"":                   "empty",
		"work/README.md":     "relative",
		"README.md":          "relative",
		"/work/../etc/x":     `".."`,
		"/work/docs/../x.md": `".."`,
		"/..":                `".."`,
		"/work//README.md":   "not clean",
		"/work/./README.md":  "not clean",
		"/work/a\\b":         "backslash",
	} {
		var pe *AbsPathError
		_, _, err := f.ReadFile(ctx, p)
		if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidPath) || !strings.Contains(err.Error(), reason) {
			t.Errorf("ReadFile(%q) = %v, want an AbsPathError saying %s", p, err, reason)
		}
		if _, err := f.WriteFile(ctx, p, []byte("x")); !errors.As(err, &pe) {
			t.Errorf("WriteFile(%q) = %v, want an AbsPathError", p, err)
		}
	}
	var nm *NoMountError
	if _, _, err := f.ReadFile(ctx, "/etc/passwd"); !errors.As(err, &nm) || !strings.Contains(err.Error(), "/refs/v1") {
		t.Fatalf("outside mounts: %v", err)
	}
	// A prefix of a mount path is not inside it.
	if _, _, err := f.ReadFile(ctx, "/workshop/x"); !errors.As(err, &nm) {
		t.Fatalf("/workshop/x: %v", err)
	}
	// One trailing slash is tolerated on directories.
	if _, err := f.List(ctx, "/work/docs/"); err != nil {
		t.Fatal(err)
	}
}

func TestFSBadMountsAreConfigErrors(t *testing.T) {
	ctx := context.Background()
	f := newTestFS(t)
	for _, mounts := range [][]Mount{
		{{Path: "/work", Workspace: "w"}, {Path: "/work/sub", Snapshot: f.snap}},
		{{Path: "/a", Workspace: "w"}, {Path: "/a", Workspace: "w"}},
		{{Path: "/a", Workspace: "w", Snapshot: f.snap}},
		{{Path: "/a"}},
		{{Path: "a", Workspace: "w"}},
		{{Path: "/", Workspace: "w"}, {Path: "/refs", Snapshot: f.snap}},
	} {
		bad := &FS{Blobs: f.Blobs, Edges: f.Edges, Heads: f.heads, Mounts: mounts}
		var me *MountError
		if _, err := bad.List(ctx, "/"); !errors.As(err, &me) {
			t.Errorf("mounts %+v: %v", mounts, err)
		}
	}
}

func TestFSWriteMovesHeadAndRecordsEdges(t *testing.T) {
	ctx := context.Background()
	f := newTestFS(t)
	before := f.heads.rev("w")
	r, err := f.WriteFile(ctx, "/work/new/dir/file.txt", []byte("hello\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Workspace != "w" || r.Revision != before+1 || f.heads.rev("w") != before+1 || r.Path != "/work/new/dir/file.txt" {
		t.Fatalf("result %+v, head revision %d (was %d)", r, f.heads.rev("w"), before)
	}
	if got := f.read(t, "/work/new/dir/file.txt"); got != "hello\n" {
		t.Fatalf("read back %q", got)
	}
	head, _, _ := f.heads.Head(ctx, "w")
	if head != r.Head.Digest {
		t.Fatal("head is not the written manifest")
	}
	m, err := ReadManifest(ctx, f.Blobs, head)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != len(sampleFiles())+1 {
		t.Fatalf("%d files", len(m.Files))
	}
	if got := f.edges.kids[head]; !reflect.DeepEqual(got, FileDigests(m)) {
		t.Fatalf("edges of the new manifest %v, want %v", got, FileDigests(m))
	}

	// Overwrite an existing file: revision increments again.
	if r, err = f.WriteFile(ctx, "/work/README.md", []byte("# New\n")); err != nil || r.Revision != before+2 {
		t.Fatalf("overwrite: %+v %v", r, err)
	}
	// A file cannot go where a directory is, or under a file.
	var wk *WrongKindError
	if _, err := f.WriteFile(ctx, "/work/docs", []byte("x")); !errors.As(err, &wk) || !wk.IsDir || wk.Path != "/work/docs" {
		t.Fatalf("write over dir: %v", err)
	}
	if _, err := f.WriteFile(ctx, "/work/a.txt/b", []byte("x")); !errors.As(err, &wk) || wk.IsDir || wk.Path != "/work/a.txt" {
		t.Fatalf("write under file: %v", err)
	}
	if _, err := f.WriteFile(ctx, "/work", []byte("x")); !errors.As(err, &wk) {
		t.Fatalf("write to mount point: %v", err)
	}
	// Limits apply to writes.
	f.Limits = Limits{MaxFileBytes: 4}
	var le *LimitError
	if _, err := f.WriteFile(ctx, "/work/big.txt", []byte("12345")); !errors.As(err, &le) || !strings.Contains(err.Error(), "/work/big.txt") {
		t.Fatalf("oversize write: %v", err)
	}
	if f.heads.rev("w") != before+2 {
		t.Fatal("failed writes moved the head")
	}
}

func TestFSWriteToSnapshotIsReadOnly(t *testing.T) {
	ctx := context.Background()
	f := newTestFS(t)
	edgesBefore, revBefore := f.edges.count(), f.heads.rev("w")
	usage, _ := f.Blobs.Usage(ctx)
	_, err := f.WriteFile(ctx, "/refs/v1/spec.md", []byte("changed"))
	var ro *ReadOnlyError
	if !errors.As(err, &ro) || !errors.Is(err, ErrReadOnly) || ro.Mount != "/refs/v1" || !strings.Contains(err.Error(), "/refs/v1") {
		t.Fatalf("write to snapshot: %v", err)
	}
	if _, err := f.EditFile(ctx, "/refs/v1/spec.md", "final", "draft"); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("edit of snapshot: %v", err)
	}
	if got := f.read(t, "/refs/v1/spec.md"); got != "# Spec\nThe notes are final.\n" {
		t.Fatalf("snapshot changed: %q", got)
	}
	after, _ := f.Blobs.Usage(ctx)
	if after != usage || f.edges.count() != edgesBefore || f.heads.rev("w") != revBefore {
		t.Fatal("a refused write stored something")
	}
}

func TestFSEditExactReplacement(t *testing.T) {
	ctx := context.Background()
	f := newTestFS(t)
	if _, err := f.WriteFile(ctx, "/work/e.txt", []byte("one two two\n")); err != nil {
		t.Fatal(err)
	}
	rev := f.heads.rev("w")
	var ee *EditError
	if _, err := f.EditFile(ctx, "/work/e.txt", "three", "3"); !errors.As(err, &ee) || ee.Count != 0 || !errors.Is(err, ErrEditMatch) {
		t.Fatalf("0 occurrences: %v", err)
	}
	if _, err := f.EditFile(ctx, "/work/e.txt", "two", "2"); !errors.As(err, &ee) || ee.Count != 2 || !strings.Contains(err.Error(), "2 times") {
		t.Fatalf("2 occurrences: %v", err)
	}
	if _, err := f.EditFile(ctx, "/work/e.txt", "", "x"); !errors.Is(err, ErrEditMatch) {
		t.Fatalf("empty old: %v", err)
	}
	if f.heads.rev("w") != rev {
		t.Fatal("failed edits moved the head")
	}
	r, err := f.EditFile(ctx, "/work/e.txt", "one two", "1 two")
	if err != nil || r.Revision != rev+1 || r.Entry.Size != 10 {
		t.Fatalf("edit: %+v %v", r, err)
	}
	if got := f.read(t, "/work/e.txt"); got != "1 two two\n" {
		t.Fatalf("after edit %q", got)
	}
	var nf *NotFoundError
	if _, err := f.EditFile(ctx, "/work/none.txt", "a", "b"); !errors.As(err, &nf) {
		t.Fatalf("edit of a missing file: %v", err)
	}
}

// Two writes of different files racing on one workspace both land.
func TestFSConcurrentWritesToDifferentFilesBothLand(t *testing.T) {
	ctx := context.Background()
	f := newTestFS(t)

	// Deterministic: another write lands between this write's head read and
	// its head move.
	f.heads.beforeMove = func(call int) {
		if call == 1 {
			if _, err := f.WriteFile(ctx, "/work/other.txt", []byte("other")); err != nil {
				t.Error(err)
			}
		}
	}
	rev := f.heads.rev("w")
	r, err := f.WriteFile(ctx, "/work/mine.txt", []byte("mine"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Revision != rev+2 {
		t.Fatalf("revision %d, want %d", r.Revision, rev+2)
	}
	if f.read(t, "/work/mine.txt") != "mine" || f.read(t, "/work/other.txt") != "other" {
		t.Fatal("a write was lost")
	}
	f.heads.beforeMove = nil

	// Racing goroutines; MaxWriteAttempts writers can always all land.
	rev = f.heads.rev("w")
	var wg sync.WaitGroup
	errs := make([]error, MaxWriteAttempts)
	for i := range MaxWriteAttempts {
		wg.Go(func() {
			_, errs[i] = f.WriteFile(ctx, fmt.Sprintf("/work/par/%d.txt", i), fmt.Appendf(nil, "file %d", i))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
		if got := f.read(t, fmt.Sprintf("/work/par/%d.txt", i)); got != fmt.Sprintf("file %d", i) {
			t.Fatalf("file %d holds %q", i, got)
		}
	}
	if got := f.heads.rev("w"); got != rev+MaxWriteAttempts {
		t.Fatalf("revision %d, want %d", got, rev+MaxWriteAttempts)
	}
}

// A write racing another write of the same file is a conflict, not a silent
// overwrite; an edit racing an edit of another part of the file re-applies.
func TestFSConcurrentWriteToSameFileConflicts(t *testing.T) {
	ctx := context.Background()
	f := newTestFS(t)
	f.heads.beforeMove = func(call int) {
		if call == 1 {
			if _, err := f.WriteFile(ctx, "/work/docs/notes.txt", []byte("theirs\n")); err != nil {
				t.Error(err)
			}
		}
	}
	rev := f.heads.rev("w")
	_, err := f.WriteFile(ctx, "/work/docs/notes.txt", []byte("mine\n"))
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrHeadMoved) || !ce.FileChanged || ce.Workspace != "w" ||
		!strings.Contains(err.Error(), "read it again") {
		t.Fatalf("same-file race: %v", err)
	}
	if got := f.read(t, "/work/docs/notes.txt"); got != "theirs\n" {
		t.Fatalf("other writer's content lost: %q", got)
	}
	if f.heads.rev("w") != rev+1 {
		t.Fatal("the conflicting write moved the head")
	}

	// Creating a file another writer created meanwhile conflicts too.
	f.heads.moveCalls = 0
	f.heads.beforeMove = func(call int) {
		if call == 1 {
			if _, err := f.WriteFile(ctx, "/work/fresh.txt", []byte("theirs")); err != nil {
				t.Error(err)
			}
		}
	}
	if _, err := f.WriteFile(ctx, "/work/fresh.txt", []byte("mine")); !errors.As(err, &ce) {
		t.Fatalf("create race: %v", err)
	}

	if _, err := f.WriteFile(ctx, "/work/two.txt", []byte("alpha\nbeta\n")); err != nil {
		t.Fatal(err)
	}
	f.heads.moveCalls = 0
	f.heads.beforeMove = func(call int) {
		if call == 1 {
			if _, err := f.EditFile(ctx, "/work/two.txt", "beta", "BETA"); err != nil {
				t.Error(err)
			}
		}
	}
	if _, err := f.EditFile(ctx, "/work/two.txt", "alpha", "ALPHA"); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, "/work/two.txt"); got != "ALPHA\nBETA\n" {
		t.Fatalf("racing edits: %q", got)
	}
}

func TestFSWriteGivesUpWhenHeadKeepsMoving(t *testing.T) {
	ctx := context.Background()
	f := newTestFS(t)
	f.heads.beforeMove = func(int) {
		// Bump the revision directly: a writer that always wins.
		f.heads.mu.Lock()
		f.heads.revs["w"]++
		f.heads.mu.Unlock()
	}
	_, err := f.WriteFile(ctx, "/work/x.txt", []byte("x"))
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.FileChanged || ce.Attempts != MaxWriteAttempts || f.heads.moveCalls != MaxWriteAttempts {
		t.Fatalf("got %v after %d moves", err, f.heads.moveCalls)
	}
}

func TestFSListShowsMounts(t *testing.T) {
	ctx := context.Background()
	f := newTestFS(t)
	list := func(dir string) string {
		t.Helper()
		kids, err := f.List(ctx, dir)
		if err != nil {
			t.Fatalf("List(%s): %v", dir, err)
		}
		var out []string
		for _, k := range kids {
			s := k.Path
			if k.IsDir {
				s += "/"
			}
			out = append(out, s)
		}
		return strings.Join(out, " ")
	}
	for dir, want := range map[string]string{
		"/":          "/refs/ /work/",
		"/refs":      "/refs/v1/",
		"/refs/v1":   "/refs/v1/data/ /refs/v1/spec.md",
		"/work/docs": "/work/docs/api/ /work/docs/guide.md /work/docs/notes.txt",
		"/work/a":    "/work/a/b/",
	} {
		if got := list(dir); got != want {
			t.Errorf("List(%s) = %q, want %q", dir, got, want)
		}
	}
	// Mount order does not change the output.
	f.Mounts[0], f.Mounts[1] = f.Mounts[1], f.Mounts[0]
	if got := list("/"); got != "/refs/ /work/" {
		t.Errorf("reordered mounts: %q", got)
	}
	var wk *WrongKindError
	if _, err := f.List(ctx, "/work/README.md"); !errors.As(err, &wk) || wk.IsDir {
		t.Fatalf("List of a file: %v", err)
	}
	var nf *NotFoundError
	if _, err := f.List(ctx, "/work/nope"); !errors.As(err, &nf) || nf.Path != "/work/nope" {
		t.Fatalf("List of nothing: %v", err)
	}
	// An empty workspace lists as empty.
	f.heads.heads["empty"], f.heads.revs["empty"] = content.Digest{}, 0
	f.Mounts = append(f.Mounts, Mount{Path: "/scratch", Workspace: "empty"})
	if got := list("/scratch"); got != "" {
		t.Fatalf("empty mount lists %q", got)
	}
	if _, err := f.WriteFile(ctx, "/scratch/first.txt", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if got := list("/scratch"); got != "/scratch/first.txt" {
		t.Fatalf("after first write %q", got)
	}
}

func TestFSGlobAcrossMounts(t *testing.T) {
	ctx := context.Background()
	f := newTestFS(t)
	for pat, want := range map[string]string{
		"/**/*.md":       "/refs/v1/spec.md /work/.cairn/prompts/inst.md /work/README.md /work/a/b/c/deep.md /work/docs/guide.md",
		"/work/docs/*":   "/work/docs/guide.md /work/docs/notes.txt",
		"/*/*/data/*":    "/refs/v1/data/x.txt",
		"/refs/**":       "/refs/v1/data/x.txt /refs/v1/spec.md",
		"/nowhere/**":    "",
		"/work/nope/*":   "",
		"/**/notes.txt":  "/work/docs/notes.txt /work/same-as-notes/notes.txt",
		"/w*/src/main.?": "",
	} {
		got, err := f.Glob(ctx, pat)
		if err != nil {
			t.Fatalf("Glob(%s): %v", pat, err)
		}
		if s := strings.Join(got, " "); s != want {
			t.Errorf("Glob(%s) = %q, want %q", pat, s, want)
		}
	}
	if _, err := f.Glob(ctx, "/work/[z"); err == nil {
		t.Error("bad pattern accepted")
	}
	var pe *AbsPathError
	for _, pat := range []string{"*.md", "/work/../**"} {
		if _, err := f.Glob(ctx, pat); !errors.As(err, &pe) {
			t.Errorf("Glob(%s) = %v", pat, err)
		}
	}
}

// A mount at "/" makes the workspace the whole session tree: every
// operation works on it with the same absolute paths as any other mount.
func TestFSRootMount(t *testing.T) {
	ctx := context.Background()
	f := newTestFS(t)
	f.Mounts = []Mount{{Path: "/", Workspace: "w"}}
	if got := f.read(t, "/docs/guide.md"); got != "Guide\n" {
		t.Fatalf("read %q", got)
	}
	r, err := f.WriteFile(ctx, "/new/file.txt", []byte("hi"))
	if err != nil || r.Path != "/new/file.txt" || r.Entry.Path != "new/file.txt" {
		t.Fatalf("write: %+v %v", r, err)
	}
	if _, err := f.EditFile(ctx, "/new/file.txt", "hi", "hello"); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, "/new/file.txt"); got != "hello" {
		t.Fatalf("read after edit %q", got)
	}
	kids, err := f.List(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range kids {
		names = append(names, k.Path)
	}
	if got := strings.Join(names, " "); got != "/.cairn /README.md /a /a.txt /docs /new /same-as-notes /src" {
		t.Fatalf("List(/) = %q", got)
	}
	walked, err := f.Walk(ctx, "/docs")
	if err != nil || len(walked) != 3 || walked[0].Path != "/docs/api/v1.json" {
		t.Fatalf("Walk(/docs) = %+v, %v", walked, err)
	}
	globbed, err := f.Glob(ctx, "/**/notes.txt")
	if err != nil || strings.Join(globbed, " ") != "/docs/notes.txt /same-as-notes/notes.txt" {
		t.Fatalf("Glob = %q, %v", globbed, err)
	}
	var wk *WrongKindError
	if _, err := f.WriteFile(ctx, "/a.txt/x", []byte("x")); !errors.As(err, &wk) || wk.Path != "/a.txt" {
		t.Fatalf("write under a file: %v", err)
	}
	if _, err := f.WriteFile(ctx, "/", []byte("x")); !errors.As(err, &wk) || !wk.IsDir {
		t.Fatalf("write to the root: %v", err)
	}
	res, err := CallTool(ctx, f.FS, "vfs_read_file", []byte(`{"path":"/README.md"}`))
	if err != nil || res.IsError || res.Text != "# Sample\n" {
		t.Fatalf("vfs_read_file on a root mount: %+v, %v", res, err)
	}
}
