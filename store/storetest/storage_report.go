package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

// RunStorageReport exercises store.StorageReporter: universe totals split
// physical from logical bytes and inline from object storage, sessions page
// by id with their shared share, a fork counts only its own roots, and
// BlobHolders names every holder kind, cuts its lists and types an unknown
// digest. newStores is as for Run; the log must implement
// store.StorageReporter.
func RunStorageReport(t *testing.T, newStores func(t *testing.T) (store.SessionLog, blob.Store)) {
	tests := []struct {
		name string
		fn   func(f *fixture)
	}{
		{"EmptyUniverse", testReportEmpty},
		{"UniverseTotalsAndSessionShares", testReportTotals},
		{"SessionsPageByID", testReportPages},
		{"UnknownSessionIsNotFound", testReportUnknownSession},
		{"ForkCountsOnlyItsOwnRoots", testReportFork},
		{"CheckpointsCountWhatTheyReach", testReportCheckpointChunks},
		{"HoldersNameEveryKind", testHoldersEveryKind},
		{"UnheldBlobHasNoHolders", testHoldersNone},
		{"HolderListsAreCutAtTheLimit", testHoldersCut},
		{"UnknownBlobIsNotFound", testHoldersUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log, blobs := newStores(t)
			tc.fn(&fixture{t: t, ctx: context.Background(), log: log, blobs: blobs})
		})
	}
}

func (f *fixture) reporter() store.StorageReporter {
	f.t.Helper()
	r, ok := f.log.(store.StorageReporter)
	if !ok {
		f.t.Fatal("backend does not implement store.StorageReporter")
	}
	return r
}

// inlineOnly reports whether the backend keeps every body in its catalog
// (the memory store has no object storage).
func (f *fixture) inlineOnly() bool {
	_, ok := f.log.(*store.Memory)
	return ok
}

func (f *fixture) universeUsage() store.UniverseUsage {
	f.t.Helper()
	u, err := f.reporter().UniverseUsage(f.ctx)
	if err != nil {
		f.t.Fatalf("UniverseUsage: %v", err)
	}
	return u
}

// sessionUsage and sessionUsageOf check that a session with events keeps
// them in some bytes and one without in none, and then clear EventBytes:
// how many bytes is the backend's business (SQLite compresses events).
func (f *fixture) sessionUsage(after string, limit int) []store.SessionUsage {
	f.t.Helper()
	list, err := f.reporter().SessionUsage(f.ctx, after, limit)
	if err != nil {
		f.t.Fatalf("SessionUsage(%q, %d): %v", after, limit, err)
	}
	for i := range list {
		list[i] = f.eventBytesChecked(list[i])
	}
	return list
}

func (f *fixture) sessionUsageOf(id string) store.SessionUsage {
	f.t.Helper()
	u, err := f.reporter().SessionUsageOf(f.ctx, id)
	if err != nil {
		f.t.Fatalf("SessionUsageOf(%s): %v", id, err)
	}
	return f.eventBytesChecked(u)
}

func (f *fixture) eventBytesChecked(u store.SessionUsage) store.SessionUsage {
	f.t.Helper()
	if (u.Events > 0) != (u.EventBytes > 0) {
		f.t.Fatalf("session %s: %d events in %d bytes", u.SessionID, u.Events, u.EventBytes)
	}
	u.EventBytes = 0
	return u
}

func (f *fixture) holders(d content.Digest, limit int) store.BlobHolders {
	f.t.Helper()
	h, err := f.reporter().BlobHolders(f.ctx, d, limit)
	if err != nil {
		f.t.Fatalf("BlobHolders(%s, %d): %v", d, limit, err)
	}
	return h
}

func (f *fixture) putBytes(data []byte) content.Digest {
	f.t.Helper()
	d, err := f.blobs.Put(f.ctx, data)
	if err != nil {
		f.t.Fatalf("blob Put: %v", err)
	}
	return d
}

func testReportEmpty(f *fixture) {
	if u := f.universeUsage(); u != (store.UniverseUsage{}) {
		f.t.Fatalf("UniverseUsage of an empty universe = %+v", u)
	}
	if list := f.sessionUsage("", 10); len(list) != 0 {
		f.t.Fatalf("SessionUsage of an empty universe = %+v", list)
	}
}

// reportFixture stores: a (rooted by s1 twice over, in two events), b
// (rooted by s1 and s2), big (rooted by s2, over the inline limit), loose
// (held by nothing), cp (s1's checkpoint); and s3, which roots nothing.
type reportFixture struct {
	a, b, big, loose, cp content.Digest
	sizes                map[content.Digest]int64
}

func (f *fixture) reportSetup() reportFixture {
	f.t.Helper()
	big := make([]byte, 100<<10)
	for i := range big {
		big[i] = byte(i * 13)
	}
	r := reportFixture{
		a: f.put("report a"), b: f.put("report bb"), big: f.putBytes(big), loose: f.put("report loose"),
		cp: f.put("report checkpoint"),
	}
	r.sizes = map[content.Digest]int64{r.a: 8, r.b: 9, r.big: int64(len(big)), r.loose: 12, r.cp: 17}
	f.append("s1", 0, opened("s1", 1), refs(2, textRef(r.a)), refs(3, textRef(r.a), textRef(r.b)))
	f.append("s2", 0, opened("s2", 1), refs(2, textRef(r.b), textRef(r.big)))
	f.append("s3", 0, opened("s3", 1))
	f.putCheckpoint(f.checkpoints(), "s1", 3, r.cp)
	return r
}

func (r reportFixture) wantSessions() []store.SessionUsage {
	return []store.SessionUsage{
		{SessionID: "s1", Roots: 2, LogicalBytes: r.sizes[r.a] + r.sizes[r.b], SharedRoots: 1, SharedBytes: r.sizes[r.b],
			Checkpoints: 1, CheckpointBytes: r.sizes[r.cp], Events: 3},
		{SessionID: "s2", Roots: 2, LogicalBytes: r.sizes[r.b] + r.sizes[r.big], SharedRoots: 1, SharedBytes: r.sizes[r.b], Events: 2},
		{SessionID: "s3", Events: 1},
	}
}

func testReportTotals(f *fixture) {
	r := f.reportSetup()
	var physical int64
	for _, n := range r.sizes {
		physical += n
	}
	want := store.UniverseUsage{
		Blobs: 5, PhysicalBytes: physical,
		InlineBlobs: 4, InlineBytes: physical - r.sizes[r.big], ObjectBlobs: 1, ObjectBytes: r.sizes[r.big],
		Sessions: 3, Roots: 4, LogicalBytes: r.sizes[r.a] + 2*r.sizes[r.b] + r.sizes[r.big],
		Checkpoints: 1, CheckpointBytes: r.sizes[r.cp], Events: 6,
	}
	if f.inlineOnly() {
		want.InlineBlobs, want.InlineBytes, want.ObjectBlobs, want.ObjectBytes = 5, physical, 0, 0
	}
	universe := f.universeUsage()
	list, err := f.reporter().SessionUsage(f.ctx, "", 0)
	if err != nil {
		f.t.Fatal(err)
	}
	var eventBytes int64
	for _, s := range list {
		eventBytes += s.EventBytes
	}
	if universe.EventBytes != eventBytes {
		f.t.Fatalf("the universe keeps its events in %d bytes, its sessions in %d", universe.EventBytes, eventBytes)
	}
	universe.EventBytes = 0
	if universe != want {
		f.t.Fatalf("UniverseUsage =\n %+v, want\n %+v", universe, want)
	}
	got := f.sessionUsage("", 0)
	if !slices.Equal(got, r.wantSessions()) {
		f.t.Fatalf("SessionUsage =\n %+v, want\n %+v", got, r.wantSessions())
	}
	// Every root row is some session's: the per-session logical bytes add
	// up to the universe's.
	var sum int64
	for _, s := range got {
		sum += s.LogicalBytes
	}
	if sum != want.LogicalBytes {
		f.t.Fatalf("sessions' logical bytes add up to %d, universe has %d", sum, want.LogicalBytes)
	}
	for _, w := range r.wantSessions() {
		if u := f.sessionUsageOf(w.SessionID); u != w {
			f.t.Fatalf("SessionUsageOf(%s) = %+v, want %+v", w.SessionID, u, w)
		}
	}
}

func testReportPages(f *fixture) {
	r := f.reportSetup()
	all := r.wantSessions()
	if got := f.sessionUsage("", 2); !slices.Equal(got, all[:2]) {
		f.t.Fatalf("first page = %+v, want %+v", got, all[:2])
	}
	if got := f.sessionUsage("s2", 2); !slices.Equal(got, all[2:]) {
		f.t.Fatalf("page after s2 = %+v, want %+v", got, all[2:])
	}
	if got := f.sessionUsage("s3", 2); len(got) != 0 {
		f.t.Fatalf("page after the last = %+v, want none", got)
	}
	// The cursor need not be a session id.
	if got := f.sessionUsage("s1x", 5); !slices.Equal(got, all[1:]) {
		f.t.Fatalf("page after s1x = %+v, want %+v", got, all[1:])
	}
}

func testReportUnknownSession(f *fixture) {
	f.reportSetup()
	if u, err := f.reporter().SessionUsageOf(f.ctx, "ghost"); !errors.Is(err, store.ErrSessionNotFound) {
		f.t.Fatalf("SessionUsageOf(ghost) = %+v, %v; want ErrSessionNotFound", u, err)
	}
}

func testReportFork(f *fixture) {
	c := f.catalog()
	inherited, own := f.put("inherited by the fork"), f.put("the fork's own")
	f.append("src", 0, opened("src", 1), refs(2, textRef(inherited)))
	f.fork(c, "child", "src", 2)
	f.append("child", 2, refs(3, textRef(own)))
	if got, want := f.sessionUsageOf("child"), (store.SessionUsage{SessionID: "child", Roots: 1, LogicalBytes: int64(len("the fork's own")), Events: 1}); got != want {
		f.t.Fatalf("fork usage = %+v, want %+v (its inherited prefix stays the source's)", got, want)
	}
	if got, want := f.sessionUsageOf("src"), (store.SessionUsage{SessionID: "src", Roots: 1, LogicalBytes: int64(len("inherited by the fork")), Events: 2}); got != want {
		f.t.Fatalf("source usage = %+v, want %+v", got, want)
	}
}

// A chunked checkpoint is its index and the pages and chunks the index
// reaches through edges; two checkpoints sharing a chunk count it once,
// for the session and for the universe.
func testReportCheckpointChunks(f *fixture) {
	f.append("s1", 0, opened("s1", 1), refs(2))
	ix1, ix2 := f.put("index one"), f.put("index two!")
	page, c1, c2, c3 := f.put("a page"), f.put("chunk 1"), f.put("chunk two"), f.put("chunk three")
	f.putEdges(ix1, page)
	f.putEdges(page, c1)
	f.putEdges(page, c2)
	f.putEdges(ix2, c2)
	f.putEdges(ix2, c3)
	f.putCheckpoint(f.checkpoints(), "s1", 1, ix1)
	f.putCheckpoint(f.checkpoints(), "s1", 2, ix2)
	want := int64(len("index one") + len("index two!") + len("a page") + len("chunk 1") + len("chunk two") + len("chunk three"))
	if u := f.sessionUsageOf("s1"); u.Checkpoints != 2 || u.CheckpointBytes != want {
		f.t.Fatalf("checkpoints of s1: %d in %d bytes, want 2 in %d", u.Checkpoints, u.CheckpointBytes, want)
	}
	if u := f.universeUsage(); u.Checkpoints != 2 || u.CheckpointBytes != want {
		f.t.Fatalf("universe checkpoints: %d in %d bytes, want 2 in %d", u.Checkpoints, u.CheckpointBytes, want)
	}
}

func testHoldersEveryKind(f *fixture) {
	before := time.Now()
	d := f.put("held many ways")
	after := time.Now()
	f.append("s2", 0, opened("s2", 1), refs(2, textRef(d)))
	f.append("s1", 0, opened("s1", 1), refs(2, textRef(d)))
	f.putCheckpoint(f.checkpoints(), "s2", 2, d)
	f.putCheckpoint(f.checkpoints(), "s1", 1, d)
	f.putCheckpoint(f.checkpoints(), "s1", 2, d)
	if _, err := f.workspaces().PutSnapshot(f.ctx, d); err != nil {
		f.t.Fatal(err)
	}
	for _, name := range []string{"main", "dev"} {
		if _, err := f.workspaces().CreateWorkspace(f.ctx, name, d); err != nil {
			f.t.Fatal(err)
		}
	}
	p1, p2 := f.put("parent one"), f.put("parent two")
	f.putEdges(p1, d)
	f.putEdges(p2, d)
	parents := []content.Digest{p1, p2}
	content.SortDigests(parents)

	h := f.holders(d, 100)
	if h.Digest != d || h.Size != int64(len("held many ways")) || h.Object {
		f.t.Fatalf("row = %s, %d bytes, object %v", h.Digest, h.Size, h.Object)
	}
	// Backends keep touch times to the millisecond or finer.
	if h.TouchedAt.Before(before.Truncate(time.Millisecond)) || h.TouchedAt.After(after) {
		f.t.Fatalf("touchedAt %v outside the put's [%v, %v]", h.TouchedAt, before, after)
	}
	wantCps := []store.CheckpointHolder{{SessionID: "s1", Seq: 1}, {SessionID: "s1", Seq: 2}, {SessionID: "s2", Seq: 2}}
	if !slices.Equal(h.Sessions, []string{"s1", "s2"}) || !slices.Equal(h.Checkpoints, wantCps) || !h.Snapshot ||
		!slices.Equal(h.Workspaces, []string{"dev", "main"}) || !slices.Equal(h.Parents, parents) {
		f.t.Fatalf("holders = %+v", h)
	}
	if h.SessionsTruncated || h.CheckpointsTruncated || h.WorkspacesTruncated || h.ParentsTruncated || !h.Held() {
		f.t.Fatalf("holders = %+v: want held, nothing truncated", h)
	}
	// A parent is held by nothing here; its holders say so.
	if hp := f.holders(p1, 100); hp.Held() {
		f.t.Fatalf("holders of an unheld parent = %+v", hp)
	}
}

// A blob nothing holds has empty holder lists; one over the inline limit
// is reported as an object wherever the backend has object storage.
func testHoldersNone(f *fixture) {
	d := f.put("held by nothing")
	h := f.holders(d, 10)
	if h.Held() || len(h.Sessions)+len(h.Checkpoints)+len(h.Workspaces)+len(h.Parents) != 0 || h.Snapshot {
		f.t.Fatalf("holders of an unheld blob = %+v", h)
	}
	big := make([]byte, 70<<10)
	for i := range big {
		big[i] = byte(i * 3)
	}
	if hb := f.holders(f.putBytes(big), 10); hb.Object == f.inlineOnly() || hb.Size != int64(len(big)) {
		f.t.Fatalf("a blob over the inline limit: object %v, size %d", hb.Object, hb.Size)
	}
}

func testHoldersCut(f *fixture) {
	d := f.put("held by many")
	var parents []content.Digest
	for _, id := range []string{"s3", "s1", "s2"} {
		f.append(id, 0, opened(id, 1), refs(2, textRef(d)))
		f.putCheckpoint(f.checkpoints(), id, 1, d)
		if _, err := f.workspaces().CreateWorkspace(f.ctx, "w-"+id, d); err != nil {
			f.t.Fatal(err)
		}
		p := f.put("parent of " + id)
		f.putEdges(p, d)
		parents = append(parents, p)
	}
	content.SortDigests(parents)
	h := f.holders(d, 2)
	if !slices.Equal(h.Sessions, []string{"s1", "s2"}) || !h.SessionsTruncated ||
		!slices.Equal(h.Checkpoints, []store.CheckpointHolder{{SessionID: "s1", Seq: 1}, {SessionID: "s2", Seq: 1}}) || !h.CheckpointsTruncated ||
		!slices.Equal(h.Workspaces, []string{"w-s1", "w-s2"}) || !h.WorkspacesTruncated ||
		!slices.Equal(h.Parents, parents[:2]) || !h.ParentsTruncated {
		f.t.Fatalf("holders cut at 2 = %+v", h)
	}
	h = f.holders(d, 3)
	if len(h.Sessions) != 3 || len(h.Checkpoints) != 3 || len(h.Workspaces) != 3 || len(h.Parents) != 3 ||
		h.SessionsTruncated || h.CheckpointsTruncated || h.WorkspacesTruncated || h.ParentsTruncated {
		f.t.Fatalf("holders at exactly the limit = %+v: want all, nothing truncated", h)
	}
}

func testHoldersUnknown(f *fixture) {
	f.put("some other blob")
	d := content.Sum([]byte("never stored here"))
	h, err := f.reporter().BlobHolders(f.ctx, d, 10)
	var nf *blob.NotFoundError
	if !errors.As(err, &nf) || nf.Digest != d || !errors.Is(err, blob.ErrNotFound) {
		f.t.Fatalf("BlobHolders of an absent digest = %+v, %v; want a *blob.NotFoundError", h, err)
	}
}
