package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/store"
)

// RunRetention exercises store.Collectable through a retention.Collector:
// each holder kind keeps its blob (so dropping it from a backend's dead
// predicate fails a test), grace is respected, the delete re-checks the
// predicate, edges release children, and the pinned constants stay.
// newStores is as for Run; the log (or the blob store) must implement
// store.Collectable.
func RunRetention(t *testing.T, newStores func(t *testing.T) (store.SessionLog, blob.Store)) {
	tests := []struct {
		name string
		fn   func(f *fixture)
	}{
		{"UnheldOldBlobIsCollected", testGCUnheld},
		{"GraceIsRespected", testGCGrace},
		{"DryRunDeletesNothing", testGCDryRun},
		{"SessionRootHolds", func(f *fixture) {
			f.gcHolder(func(d content.Digest) { f.append("s1", 0, opened("s1", 1), refs(2, textRef(d))) })
		}},
		{"CheckpointHolds", func(f *fixture) {
			f.gcHolder(func(d content.Digest) {
				f.append("s1", 0, opened("s1", 1))
				f.putCheckpoint(f.checkpoints(), "s1", 1, d)
			})
		}},
		{"SnapshotRecordHolds", func(f *fixture) {
			f.gcHolder(func(d content.Digest) {
				if _, err := f.workspaces().PutSnapshot(f.ctx, d); err != nil {
					f.t.Fatal(err)
				}
			})
		}},
		{"WorkspaceHeadHolds", func(f *fixture) {
			f.gcHolder(func(d content.Digest) {
				if _, err := f.workspaces().CreateWorkspace(f.ctx, "main", d); err != nil {
					f.t.Fatal(err)
				}
			})
		}},
		{"IncomingEdgeHolds", func(f *fixture) {
			f.gcHolder(func(d content.Digest) {
				parent := f.put("held parent")
				f.append("s1", 0, opened("s1", 1), refs(2, textRef(parent)))
				f.putEdges(parent, d)
			})
		}},
		{"ConstantBlobsAreKept", testGCConstants},
		{"RefInsideBlobBytesHoldsNothing", testGCRefInBytes},
		{"RootAppendedAfterScanWins", testGCRecheckRoot},
		{"TouchAfterScanWins", testGCRecheckTouch},
		{"RemovedParentReleasesChildren", testGCEdgesRelease},
		{"PagesCoverTheCatalog", testGCPages},
		{"CursorOutlivesTheCollector", testGCCursorPersists},
		{"LargeBlobObjectIsDeleted", testGCLarge},
		{"ForkTreeReleasesRootsWithItsSessions", testGCForkTree},
		{"CloseAndCompactionKeepRoots", testGCCloseAndCompactionKeepRoots},
		{"ReuploadSurvivesTheOldObjectsDelete", testGCReupload},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log, blobs := newStores(t)
			tc.fn(&fixture{t: t, ctx: context.Background(), log: log, blobs: blobs})
		})
	}
}

func (f *fixture) collectable() store.Collectable {
	f.t.Helper()
	if c, ok := f.log.(store.Collectable); ok {
		return c
	}
	if c, ok := f.blobs.(store.Collectable); ok {
		return c
	}
	f.t.Fatal("backend does not implement store.Collectable")
	return nil
}

func (f *fixture) putEdges(parent content.Digest, kids ...content.Digest) {
	f.t.Helper()
	e, ok := f.log.(store.Edges)
	if !ok {
		f.t.Fatal("backend does not implement store.Edges")
	}
	if err := e.PutEdges(f.ctx, parent, kids); err != nil {
		f.t.Fatalf("PutEdges: %v", err)
	}
}

// collector collects this fixture's store with a clock shifted by ahead.
func (f *fixture) collector(ahead time.Duration) *retention.Collector {
	return &retention.Collector{
		Universes: retention.Single("u", f.collectable()),
		Now:       func() time.Time { return time.Now().Add(ahead) },
	}
}

// gc runs one pass whose clock is an hour ahead, with a grace of a minute:
// everything put so far is past its grace.
func (f *fixture) gc() retention.Stats {
	f.t.Helper()
	st, err := f.collector(time.Hour).Collect(f.ctx, retention.Options{Grace: time.Minute})
	if err != nil {
		f.t.Fatalf("Collect: %v", err)
	}
	return st
}

func (f *fixture) exists(d content.Digest) bool {
	f.t.Helper()
	missing, err := f.blobs.Missing(f.ctx, []content.Digest{d})
	if err != nil {
		f.t.Fatalf("Missing: %v", err)
	}
	return len(missing) == 0
}

func (f *fixture) wantExists(what string, d content.Digest, want bool) {
	f.t.Helper()
	if got := f.exists(d); got != want {
		f.t.Fatalf("%s: exists = %v, want %v", what, got, want)
	}
}

// gcHolder makes a blob held by hold, beside an unheld control blob, and
// checks that a pass deletes the control and keeps the held one.
func (f *fixture) gcHolder(hold func(d content.Digest)) {
	f.t.Helper()
	held, control := f.put("held blob"), f.put("control blob")
	hold(held)
	st := f.gc()
	f.wantExists("held blob", held, true)
	f.wantExists("unheld control", control, false)
	if st.RowsDeleted < 1 {
		f.t.Fatalf("stats %+v: want the control deleted", st)
	}
}

func testGCUnheld(f *fixture) {
	d := f.put("unheld")
	st := f.gc()
	f.wantExists("unheld", d, false)
	if st.UniversesScanned != 1 || st.RowsScanned != 1 || st.Candidates != 1 || st.RowsDeleted != 1 || st.BytesFreed != int64(len("unheld")) {
		f.t.Fatalf("stats = %+v", st)
	}
	if _, err := f.blobs.Get(f.ctx, d); !errors.Is(err, blob.ErrNotFound) {
		f.t.Fatalf("Get of a collected blob = %v, want not found", err)
	}
	// The same bytes can be put again and read.
	if f.put("unheld") != d {
		f.t.Fatal("digest changed")
	}
	if got, err := f.blobs.Get(f.ctx, d); err != nil || string(got) != "unheld" {
		f.t.Fatalf("Get after re-put = %q, %v", got, err)
	}
}

func testGCGrace(f *fixture) {
	d := f.put("young")
	st, err := f.collector(0).Collect(f.ctx, retention.Options{Grace: time.Hour})
	if err != nil {
		f.t.Fatal(err)
	}
	f.wantExists("blob within grace", d, true)
	if st.RowsScanned != 0 || st.RowsDeleted != 0 {
		f.t.Fatalf("stats within grace = %+v", st)
	}
	// A put of the same bytes renews the grace.
	c := f.collector(2 * time.Hour)
	c.Now = func() time.Time { return time.Now().Add(30 * time.Minute) }
	f.put("young")
	if _, err := c.Collect(f.ctx, retention.Options{Grace: time.Hour}); err != nil {
		f.t.Fatal(err)
	}
	f.wantExists("blob put again", d, true)
	if _, err := f.collector(2*time.Hour).Collect(f.ctx, retention.Options{Grace: time.Hour}); err != nil {
		f.t.Fatal(err)
	}
	f.wantExists("blob past grace", d, false)
}

func testGCDryRun(f *fixture) {
	d := f.put("dry")
	f.put("dry 2")
	c := f.collector(time.Hour)
	c.PageSize = 1
	c.MaxRows = 1
	st, err := c.Collect(f.ctx, retention.Options{Grace: time.Minute, DryRun: true})
	if err != nil {
		f.t.Fatal(err)
	}
	if st.Candidates != 1 || st.RowsDeleted != 0 {
		f.t.Fatalf("dry run stats = %+v", st)
	}
	f.wantExists("after a dry run", d, true)
	// A dry run left no cursor behind: a real pass of one row starts at the
	// first row again.
	c.MaxRows = 0
	c.PageSize = 0
	st, err = c.Collect(f.ctx, retention.Options{Grace: time.Minute})
	if err != nil || st.RowsDeleted != 2 {
		f.t.Fatalf("real pass = %+v, %v", st, err)
	}
}

func testGCConstants(f *fixture) {
	var ds []content.Digest
	for _, b := range core.ConstantBlobs() {
		d, err := f.blobs.Put(f.ctx, b)
		if err != nil {
			f.t.Fatal(err)
		}
		ds = append(ds, d)
	}
	st := f.gc()
	for _, d := range ds {
		f.wantExists("constant blob", d, true)
	}
	if st.Candidates != 0 {
		f.t.Fatalf("constants counted as candidates: %+v", st)
	}
}

func testGCRecheckRoot(f *fixture) {
	d := f.put("late root")
	c := f.collector(time.Hour)
	c.AfterScan = func(_ string, cands []content.Digest) {
		f.append("s1", 0, opened("s1", 1), refs(2, textRef(d)))
	}
	st, err := c.Collect(f.ctx, retention.Options{Grace: time.Minute})
	if err != nil {
		f.t.Fatal(err)
	}
	f.wantExists("blob rooted after the scan", d, true)
	if st.Candidates != 1 || st.RowsDeleted != 0 {
		f.t.Fatalf("stats = %+v", st)
	}
}

func testGCRecheckTouch(f *fixture) {
	d := f.put("late touch")
	time.Sleep(5 * time.Millisecond)
	c := f.collector(0) // grace 0: the cutoff is the start of the pass
	c.AfterScan = func(string, []content.Digest) {
		time.Sleep(5 * time.Millisecond)
		f.put("late touch")
	}
	st, err := c.Collect(f.ctx, retention.Options{Grace: 0})
	if err != nil {
		f.t.Fatal(err)
	}
	f.wantExists("blob put again after the scan", d, true)
	if st.Candidates != 1 || st.RowsDeleted != 0 {
		f.t.Fatalf("stats = %+v", st)
	}
}

func testGCEdgesRelease(f *fixture) {
	// The child is older than its parent, so the pass that removes the
	// parent has already scanned it: only a later pass can take it.
	child := f.put("child")
	time.Sleep(5 * time.Millisecond)
	parent := f.put("parent")
	f.putEdges(parent, child)
	// And a younger child, released on a later page of the same pass.
	time.Sleep(5 * time.Millisecond)
	young := f.put("young child")
	f.putEdges(parent, young)

	c := f.collector(time.Hour)
	c.PageSize = 1
	st, err := c.Collect(f.ctx, retention.Options{Grace: time.Minute})
	if err != nil {
		f.t.Fatal(err)
	}
	f.wantExists("parent", parent, false)
	f.wantExists("older child, held during the first pass's scan", child, true)
	f.wantExists("younger child, released for a later page", young, false)
	if st.RowsDeleted != 2 {
		f.t.Fatalf("first pass = %+v", st)
	}
	if _, err := c.Collect(f.ctx, retention.Options{Grace: time.Minute}); err != nil {
		f.t.Fatal(err)
	}
	f.wantExists("older child after a second pass", child, false)
}

func testGCPages(f *fixture) {
	var ds []content.Digest
	for i := range 7 {
		ds = append(ds, f.put(string(rune('a'+i))+" paged"))
	}
	kept := f.put("kept paged")
	f.append("s1", 0, opened("s1", 1), refs(2, textRef(kept)))
	c := f.collector(time.Hour)
	c.PageSize = 2
	c.MaxRows = 3 // a bounded pass stops and the next resumes
	total := int64(0)
	for range 5 {
		st, err := c.Collect(f.ctx, retention.Options{Grace: time.Minute})
		if err != nil {
			f.t.Fatal(err)
		}
		if st.RowsScanned > 3 {
			f.t.Fatalf("pass scanned %d rows, over its bound", st.RowsScanned)
		}
		total += st.RowsDeleted
	}
	if total != 7 {
		f.t.Fatalf("deleted %d, want 7", total)
	}
	for _, d := range ds {
		f.wantExists("paged blob", d, false)
	}
	f.wantExists("rooted blob", kept, true)
}

func testGCLarge(f *fixture) {
	big := make([]byte, 100<<10)
	for i := range big {
		big[i] = byte(i * 7)
	}
	d, err := f.blobs.Put(f.ctx, big)
	if err != nil {
		f.t.Fatal(err)
	}
	st := f.gc()
	if st.RowsDeleted != 1 || st.BytesFreed != int64(len(big)) || st.ObjectErrors != 0 {
		f.t.Fatalf("stats = %+v", st)
	}
	if _, err := f.blobs.Get(f.ctx, d); !errors.Is(err, blob.ErrNotFound) {
		f.t.Fatalf("Get of a collected large blob = %v, want not found", err)
	}
	// Put again: a fresh upload, readable.
	if _, err := f.blobs.Put(f.ctx, big); err != nil {
		f.t.Fatal(err)
	}
	if got, err := f.blobs.Get(f.ctx, d); err != nil || len(got) != len(big) {
		f.t.Fatalf("Get after re-put: %d bytes, %v", len(got), err)
	}
}
