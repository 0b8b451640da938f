package storetest

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/store"
)

// testGCForkTree: a fork roots only what its own events reference, so
// deleting a fork releases its refs and never its source's; the source's
// refs go when the last session of the tree that roots them is deleted.
func testGCForkTree(f *fixture) {
	c := f.catalog()
	inherited, own, shared := f.put("the source's ref"), f.put("the fork's own ref"), f.put("a ref both root")
	f.append("src", 0, opened("src", 1), refs(2, textRef(inherited), textRef(shared)), closeProposal(3))
	f.fork(c, "leaf", "src", 2)
	f.append("leaf", 2, refs(3, textRef(own), textRef(shared)), closeProposal(4))

	f.gc()
	for what, d := range map[string]content.Digest{"inherited": inherited, "own": own, "shared": shared} {
		f.wantExists(what+" ref while the tree lives", d, true)
	}
	f.wantDeleted(c, "leaf", false, "leaf")
	f.gc()
	f.wantExists("the deleted fork's own ref", own, false)
	f.wantExists("the source's ref after its fork went", inherited, true)
	f.wantExists("a ref the source roots too", shared, true)

	// The whole tree at once: a cascade releases the source's and the fork's.
	f.fork(c, "leaf2", "src", 3)
	mine := f.put("the second fork's ref")
	f.append("leaf2", 3, refs(4, textRef(mine)), closeProposal(5))
	f.wantDeleted(c, "src", true, "src", "leaf2")
	f.gc()
	for what, d := range map[string]content.Digest{"inherited": inherited, "shared": shared, "the second fork's": mine} {
		f.wantExists(what+" ref after the tree went", d, false)
	}
}

// testGCCloseAndCompactionKeepRoots: neither closing a session nor
// compacting its context releases what its history references.
func testGCCloseAndCompactionKeepRoots(f *fixture) {
	early, summary := f.put("a message compaction drops"), f.put("the summary")
	f.append("s1", 0, opened("s1", 1), refs(2, textRef(early)))
	f.append("s1", 2,
		proposal(core.KindContextCompacted, 3, map[string]any{"summary": textRef(summary), "removed": []string{"e1"}}),
		closeProposal(4))
	st := f.gc()
	f.wantExists("a compacted-away ref of a closed session", early, true)
	f.wantExists("the summary", summary, true)
	if st.RowsDeleted != 0 {
		f.t.Fatalf("stats %+v: a closed, compacted session lost bytes", st)
	}
}

// reuploading wraps a catalog so that each object delete first puts bytes
// again: the re-upload lands between the row's delete and its object's.
type reuploading struct {
	store.Collectable
	reupload func()
	calls    int
}

func (r *reuploading) DeleteObject(ctx context.Context, key string) error {
	r.calls++
	r.reupload()
	return r.Collectable.DeleteObject(ctx, key)
}

// testGCReupload: once a blob's row is collected, the same bytes put again
// are a new upload under a new physical key, so the delayed deletion of the
// old object leaves the new copy intact.
func testGCReupload(f *fixture) {
	data := bytes.Repeat([]byte("re-uploaded after collection. "), 4<<10) // 120 KiB: object storage where there is one
	d, err := f.blobs.Put(f.ctx, data)
	if err != nil {
		f.t.Fatal(err)
	}
	again := func() {
		if _, err := f.blobs.Put(f.ctx, data); err != nil {
			f.t.Fatalf("re-put: %v", err)
		}
	}
	wrapped := &reuploading{Collectable: f.collectable(), reupload: again}
	col := f.collector(time.Hour)
	col.Universes = retention.Single("u", wrapped)
	st, err := col.Collect(f.ctx, retention.Options{Grace: time.Minute})
	if err != nil || st.RowsDeleted != 1 || st.ObjectErrors != 0 {
		f.t.Fatalf("Collect = %+v, %v", st, err)
	}
	if wrapped.calls == 0 {
		again() // the body was inline: no object delete to race with
	}
	got, err := f.blobs.Get(f.ctx, d)
	if err != nil || !bytes.Equal(got, data) {
		f.t.Fatalf("Get after the re-upload raced the old object's delete: %d bytes, %v", len(got), err)
	}
	// And the new copy is an ordinary blob: held once rooted.
	f.append("s1", 0, opened("s1", 1), refs(2, textRef(d)))
	f.gc()
	f.wantExists("the re-uploaded blob, rooted", d, true)
}

// refsOf returns the blob refs a session's events name.
func (f *fixture) refsOf(id string) []content.Digest {
	f.t.Helper()
	var out []content.Digest
	for _, ev := range f.readAfter(id, 0, 0) {
		ds, err := content.ExtractRefs(ev.Payload)
		if err != nil {
			f.t.Fatalf("%s event %d: %v", id, ev.Seq, err)
		}
		out = append(out, ds...)
	}
	return out
}

// wantAllReadable checks every ref the sessions' events name reads back.
func (f *fixture) wantAllReadable(ids ...string) int {
	f.t.Helper()
	n := 0
	for _, id := range ids {
		for _, d := range f.refsOf(id) {
			if _, err := f.blobs.Get(f.ctx, d); err != nil {
				f.t.Fatalf("session %s references %s, which is gone: %v", id, d, err)
			}
			n++
		}
	}
	return n
}

func raceBytes(writer, i int) []byte {
	b := fmt.Appendf(nil, "writer %d blob %d ", writer, i)
	if i%7 == 3 {
		// Large enough for object storage where the store has one.
		return bytes.Repeat(b, (70<<10)/len(b)+1)
	}
	return b
}

// testGCCursorPersists: a bounded pass records where it stopped in the
// store, so the next pass resumes there even from another collector (a
// one-shot `cairn gc`, a new leader); a dry run leaves the cursor alone.
func testGCCursorPersists(f *fixture) {
	var held []content.ContentRef
	for i := range 6 {
		held = append(held, textRef(f.put(fmt.Sprintf("rooted %d", i))))
	}
	f.append("s1", 0, opened("s1", 1), refs(2, held...))
	c := f.collectable()
	pass := func(maxRows int, dry bool) retention.Stats {
		f.t.Helper()
		col := f.collector(time.Hour) // a fresh collector each time
		col.MaxRows = maxRows
		st, err := col.Collect(f.ctx, retention.Options{Grace: time.Minute, DryRun: dry})
		if err != nil {
			f.t.Fatal(err)
		}
		return st
	}
	cursor := func() store.BlobCursor {
		f.t.Helper()
		cur, err := c.LoadBlobCursor(f.ctx)
		if err != nil {
			f.t.Fatal(err)
		}
		return cur
	}
	// More blobs than these (the constants) may be in the catalog; count
	// from what a whole pass scans.
	all := pass(0, true).RowsScanned
	if st := pass(3, false); st.RowsScanned != 3 {
		f.t.Fatalf("bounded pass scanned %d rows, want 3", st.RowsScanned)
	}
	stopped := cursor()
	if stopped.IsZero() {
		f.t.Fatal("a bounded pass left no cursor")
	}
	if st := pass(0, true); st.RowsScanned != all-3 || !cursor().TouchedAt.Equal(stopped.TouchedAt) || cursor().Digest != stopped.Digest {
		f.t.Fatalf("dry run from the cursor scanned %d rows (want %d) and left cursor %+v (was %+v)", st.RowsScanned, all-3, cursor(), stopped)
	}
	if st := pass(0, false); st.RowsScanned != all-3 {
		f.t.Fatalf("a new collector scanned %d rows, want the %d after the stored cursor", st.RowsScanned, all-3)
	}
	if !cursor().IsZero() {
		f.t.Fatalf("a pass that reached the end left cursor %+v", cursor())
	}
	if st := pass(0, false); st.RowsScanned != all {
		f.t.Fatalf("the pass after a complete one scanned %d rows, want all %d", st.RowsScanned, all)
	}
}

// testGCRefInBytes: a ref written inside a blob's bytes, even as an exact
// JSON ref string, holds nothing; only a format's declared edges do.
func testGCRefInBytes(f *fixture) {
	named := f.put("named inside another blob")
	doc := f.put(`{"ref":"` + named.String() + `","note":"a document that mentions a ref"}`)
	f.append("s1", 0, opened("s1", 1), refs(2, content.ContentRef{Digest: doc, MediaType: content.MediaJSON}))
	f.gc()
	f.wantExists("the rooted document", doc, true)
	f.wantExists("a blob only named inside its bytes", named, false)
}
