package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// catalog returns the backend's store.Catalog; backends without one skip
// these tests.
func (f *fixture) catalog() store.Catalog {
	f.t.Helper()
	if c, ok := f.log.(store.Catalog); ok {
		return c
	}
	f.t.Skip("backend does not fork, delete or page sessions")
	return nil
}

// source creates a session of n events: session.opened at seq 1, then notes
// "<id> <seq>".
func (f *fixture) source(id string, n int) {
	f.t.Helper()
	ps := []core.Proposal{opened(id, 1)}
	for i := 2; i <= n; i++ {
		ps = append(ps, note(fmt.Sprintf("%s %d", id, i)))
	}
	f.append(id, 0, ps...)
}

// forkProjection is the projection the tests hand Fork: what the source's
// log shows at any of the points they fork at.
var forkProjection = core.Lifecycle{Status: core.SessionStatusOpen, Model: testModel, LastRunID: "r0", LastRunStatus: core.StatusCompleted}

func (f *fixture) fork(c store.Catalog, id, source string, atSeq int64) core.Lifecycle {
	f.t.Helper()
	l, err := c.Fork(f.ctx, store.ForkRequest{SessionID: id, Source: source, AtSeq: atSeq, AtMs: 5000 + atSeq, Projection: forkProjection})
	if err != nil {
		f.t.Fatalf("Fork(%s of %s at %d): %v", id, source, atSeq, err)
	}
	return l
}

// wantTexts checks the seqs of evs and that each holds the note "<owner> <seq>"
// of the owner listed for it (session.opened at seq 1 is the root's).
func (f *fixture) wantTexts(what string, evs []core.Event, from int64, owners ...string) {
	f.t.Helper()
	want := make([]int64, len(owners))
	for i := range owners {
		want[i] = from + int64(i)
	}
	f.wantSeqs(what, evs, want...)
	for i, ev := range evs {
		if ev.Seq == 1 {
			if ev.Kind != core.KindSessionOpened || !bytes.Contains(ev.Payload, []byte(fmt.Sprintf(`"sessionId":%q`, owners[i]))) {
				f.t.Fatalf("%s: seq 1 = %s, want %s's session.opened", what, show(ev), owners[i])
			}
			continue
		}
		if w := fmt.Sprintf(`{"text":"%s %d"}`, owners[i], ev.Seq); string(ev.Payload) != w {
			f.t.Fatalf("%s: seq %d = %s, want %s", what, ev.Seq, ev.Payload, w)
		}
	}
}

func repeat(s string, n int) []string { return slices.Repeat([]string{s}, n) }

func testForkReadsThroughSource(f *fixture) {
	c := f.catalog()
	f.source("src", 10)
	l := f.fork(c, "child", "src", 6)
	want := forkProjection
	want.SessionID, want.Head, want.CreatedAtMs, want.UpdatedAtMs = "child", 6, 5006, 5006
	want.ForkOf = core.ForkPoint{SessionID: "src", AtSeq: 6}
	if l != want || f.session("child") != want {
		f.t.Fatalf("fork lifecycle %+v, stored %+v; want %+v", l, f.session("child"), want)
	}
	f.wantTexts("child, nothing of its own", f.readAfter("child", 0, 0), 1, repeat("src", 6)...)
	f.wantTexts("child backward", f.readBefore("child", 100, 0), 1, repeat("src", 6)...)

	// Its first own event is the next seq; the line stays contiguous.
	f.append("child", 6, note("child 7"), note("child 8"))
	f.append("child", 8, note("child 9"))
	own := append(repeat("src", 6), repeat("child", 3)...)
	f.wantTexts("child", f.readAfter("child", 0, 0), 1, own...)
	f.wantTexts("child backward", f.readBefore("child", 10, 0), 1, own...)
	if l := f.session("child"); l.Head != 9 || l.UpdatedAtMs != 1 || l.CreatedAtMs != 5006 || l.Model != testModel {
		f.t.Fatalf("child after its appends: %+v", l)
	}
	// Pages across the fork point, both ways.
	f.wantTexts("ReadAfter(4,3)", f.readAfter("child", 4, 3), 5, "src", "src", "child")
	f.wantTexts("ReadAfter(6,1)", f.readAfter("child", 6, 1), 7, "child")
	f.wantTexts("ReadAfter(0,2)", f.readAfter("child", 0, 2), 1, "src", "src")
	f.wantTexts("ReadAfter(9,5)", f.readAfter("child", 9, 5), 10)
	f.wantTexts("ReadAfter(-3,1)", f.readAfter("child", -3, 1), 1, "src")
	f.wantTexts("ReadBefore(9,3)", f.readBefore("child", 9, 3), 6, "src", "child", "child")
	f.wantTexts("ReadBefore(7,2)", f.readBefore("child", 7, 2), 5, "src", "src")
	f.wantTexts("ReadBefore(6,0)", f.readBefore("child", 6, 0), 1, repeat("src", 5)...)
	f.wantTexts("ReadBefore(1,5)", f.readBefore("child", 1, 5), 1)
	f.wantTexts("ReadBefore(100,1)", f.readBefore("child", 100, 1), 9, "child")

	// The head check is the fork's own.
	_, err := f.log.Append(f.ctx, "child", 0, []core.Proposal{opened("child", 1)})
	f.wantConflict(err, "child", 0, 9)
	_, err = f.log.Append(f.ctx, "child", 6, []core.Proposal{note("late")})
	f.wantConflict(err, "child", 6, 9)
	// The source is untouched.
	f.wantTexts("source", f.readAfter("src", 0, 0), 1, repeat("src", 10)...)
	if h := f.head("src"); h != 10 {
		f.t.Fatalf("source head %d after the fork's appends, want 10", h)
	}
}

func testForkIsClampedToItsPoint(f *fixture) {
	c := f.catalog()
	f.source("src", 4)
	f.fork(c, "at-head", "src", 4)
	f.fork(c, "early", "src", 2)
	f.append("src", 4, note("src 5"), note("src 6"))
	f.wantTexts("fork at the old head", f.readAfter("at-head", 0, 0), 1, repeat("src", 4)...)
	f.wantTexts("fork at 2", f.readAfter("early", 0, 0), 1, "src", "src")
	f.wantTexts("fork at 2 backward", f.readBefore("early", 7, 0), 1, "src", "src")
	f.wantTexts("fork at 2, past its head", f.readAfter("early", 2, 10), 3)
	f.append("early", 2, note("early 3"))
	f.wantTexts("fork at 2 with its own", f.readAfter("early", 0, 0), 1, "src", "src", "early")
	f.wantTexts("source", f.readAfter("src", 0, 0), 1, repeat("src", 6)...)
	if h := f.head("at-head"); h != 4 {
		f.t.Fatalf("fork head %d after the source moved on, want 4", h)
	}
}

func testForkOfFork(f *fixture) {
	c := f.catalog()
	f.source("a", 10)
	f.fork(c, "b", "a", 6)
	f.append("b", 6, note("b 7"), note("b 8"))
	f.fork(c, "c", "b", 7) // a 1..6, b 7
	f.append("c", 7, note("c 8"))
	f.append("b", 8, note("b 9")) // later than c's fork point: never in c
	f.wantTexts("c", f.readAfter("c", 0, 0), 1, "a", "a", "a", "a", "a", "a", "b", "c")
	f.wantTexts("c backward", f.readBefore("c", 9, 0), 1, "a", "a", "a", "a", "a", "a", "b", "c")
	f.wantTexts("c pages", f.readAfter("c", 5, 2), 6, "a", "b")
	f.wantTexts("c pages backward", f.readBefore("c", 9, 3), 6, "a", "b", "c")
	// A fork below its source's own fork point reads the root only.
	f.fork(c, "d", "c", 3)
	f.append("d", 3, note("d 4"))
	f.wantTexts("d", f.readAfter("d", 0, 0), 1, "a", "a", "a", "d")
	// A fork of c at its head, then c's source chain again.
	f.fork(c, "e", "c", 8)
	f.append("e", 8, note("e 9"))
	f.wantTexts("e", f.readAfter("e", 0, 0), 1, "a", "a", "a", "a", "a", "a", "b", "c", "e")
	f.wantTexts("e backward by one", f.readBefore("e", 10, 1), 9, "e")
	f.wantTexts("b", f.readAfter("b", 0, 0), 1, "a", "a", "a", "a", "a", "a", "b", "b", "b")
}

func testForkDepthLimit(f *fixture) {
	c := f.catalog()
	f.source("f0", 2)
	prev := "f0"
	for d := 1; d <= store.MaxForkDepth; d++ {
		id := fmt.Sprintf("f%d", d)
		f.fork(c, id, prev, int64(d+1))
		f.append(id, int64(d+1), note(fmt.Sprintf("%s %d", id, d+2)))
		prev = id
	}
	owners := []string{"f0", "f0"}
	for d := 1; d <= store.MaxForkDepth; d++ {
		owners = append(owners, fmt.Sprintf("f%d", d))
	}
	f.wantTexts("the deepest fork", f.readAfter(prev, 0, 0), 1, owners...)
	_, err := c.Fork(f.ctx, store.ForkRequest{SessionID: "too-deep", Source: prev, AtSeq: 3, AtMs: 1, Projection: forkProjection})
	var de *store.ForkDepthError
	if !errors.As(err, &de) || !errors.Is(err, store.ErrForkTooDeep) || de.Depth != store.MaxForkDepth+1 || de.Max != store.MaxForkDepth || de.Source != prev {
		f.t.Fatalf("fork past the depth limit: %v (%T), want a *ForkDepthError", err, err)
	}
	f.wantNotFound("too-deep")
	// A fork of a shallower one still works.
	f.fork(c, "shallow", "f3", 2)
}

func testForkRequestsRejected(f *fixture) {
	c := f.catalog()
	f.source("src", 3)
	f.source("taken", 1)
	cases := []struct {
		name string
		req  store.ForkRequest
		want error
	}{
		{"unknown source", store.ForkRequest{SessionID: "new", Source: "ghost", AtSeq: 1}, store.ErrSessionNotFound},
		{"id in use", store.ForkRequest{SessionID: "taken", Source: "src", AtSeq: 2}, store.ErrSessionExists},
		{"fork point 0", store.ForkRequest{SessionID: "new", Source: "src", AtSeq: 0}, store.ErrInvalidFork},
		{"fork point past the head", store.ForkRequest{SessionID: "new", Source: "src", AtSeq: 4}, store.ErrInvalidFork},
		{"fork of itself", store.ForkRequest{SessionID: "src", Source: "src", AtSeq: 2}, store.ErrInvalidFork},
		{"empty id", store.ForkRequest{SessionID: "", Source: "src", AtSeq: 2}, store.ErrInvalidFork},
		{"bad id", store.ForkRequest{SessionID: "n\x00", Source: "src", AtSeq: 2}, store.ErrInvalidFork},
	}
	for _, tc := range cases {
		tc.req.AtMs, tc.req.Projection = 9, forkProjection
		if l, err := c.Fork(f.ctx, tc.req); !errors.Is(err, tc.want) {
			f.t.Fatalf("%s: Fork = %+v, %v; want %v", tc.name, l, err, tc.want)
		}
	}
	f.wantNotFound("new")
	if l := f.session("taken"); l.Head != 1 || l.CreatedAtMs != 1 {
		f.t.Fatalf("the session a fork was refused under changed: %+v", l)
	}
	if src, err := c.Source(f.ctx, "taken"); err != nil || src != nil {
		f.t.Fatalf("Source(taken) = %+v, %v; want none", src, err)
	}
}

func testLineage(f *fixture) {
	c := f.catalog()
	f.source("src", 3)
	f.fork(c, "fork", "src", 2)
	f.source("clone", 1)
	f.source("plain", 1)
	if err := c.RecordClone(f.ctx, "clone", "src"); err != nil {
		f.t.Fatalf("RecordClone: %v", err)
	}
	for id, want := range map[string]*store.Source{
		"fork":  {SessionID: "src", AtSeq: 2},
		"clone": {SessionID: "src"},
		"src":   nil,
		"plain": nil,
	} {
		got, err := c.Source(f.ctx, id)
		if err != nil || (got == nil) != (want == nil) || got != nil && *got != *want {
			f.t.Fatalf("Source(%s) = %+v, %v; want %+v", id, got, err, want)
		}
	}
	if _, err := c.Source(f.ctx, "ghost"); !errors.Is(err, store.ErrSessionNotFound) {
		f.t.Fatalf("Source(ghost): %v, want ErrSessionNotFound", err)
	}
	for _, tc := range []struct{ id, source string }{{"clone", "plain"}, {"fork", "plain"}, {"plain", "plain"}} {
		if err := c.RecordClone(f.ctx, tc.id, tc.source); !errors.Is(err, store.ErrInvalidFork) {
			f.t.Fatalf("RecordClone(%s, %s): %v, want ErrInvalidFork", tc.id, tc.source, err)
		}
	}
	for _, tc := range []struct{ id, source string }{{"ghost", "src"}, {"plain", "ghost"}} {
		if err := c.RecordClone(f.ctx, tc.id, tc.source); !errors.Is(err, store.ErrSessionNotFound) {
			f.t.Fatalf("RecordClone(%s, %s): %v, want ErrSessionNotFound", tc.id, tc.source, err)
		}
	}
	if got, _ := c.Source(f.ctx, "plain"); got != nil {
		f.t.Fatalf("a refused RecordClone left lineage %+v", got)
	}
}

func testForkRootsAndCheckpoints(f *fixture) {
	c := f.catalog()
	a, b := f.put("inherited ref"), f.put("own ref")
	f.append("src", 0, opened("src", 1), refs(2, textRef(a)))
	f.fork(c, "child", "src", 2)
	missing := content.Sum([]byte("never stored"))
	_, err := f.log.Append(f.ctx, "child", 2, []core.Proposal{refs(3, textRef(missing))})
	f.wantMissing(err, missing)
	f.append("child", 2, refs(3, textRef(b)))
	if rl, ok := f.log.(rootLister); ok {
		for id, want := range map[string][]content.Digest{"src": {a}, "child": {b}} {
			got, err := rl.Roots(f.ctx, id)
			if err != nil || !slices.Equal(got, want) {
				f.t.Fatalf("Roots(%s) = %v, %v; want %v", id, got, err, want)
			}
		}
	}
	if cps, ok := f.log.(store.Checkpoints); ok {
		cp := f.put("checkpoint of the fork at its point")
		f.putCheckpoint(cps, "child", 2, cp)
		f.wantLatest(cps, "child", 0, 2, cp)
		f.wantNoCheckpoint(cps, "src", 0)
		if err := cps.PutCheckpoint(f.ctx, "child", 4, cp); !errors.Is(err, store.ErrInvalidCheckpoint) {
			f.t.Fatalf("checkpoint past the fork's head: %v", err)
		}
	}
}

func closeProposal(at int64) core.Proposal {
	return proposal(core.KindSessionClosed, at, core.SessionClosed{Reason: "done"})
}

// closed creates a closed session: opened, a ref to d, closed.
func (f *fixture) closed(id string, d content.Digest) {
	f.t.Helper()
	f.append(id, 0, opened(id, 1), refs(2, textRef(d)), closeProposal(3))
}

func (f *fixture) closeSession(id string) {
	f.t.Helper()
	f.append(id, f.head(id), closeProposal(9))
}

func (f *fixture) wantDeleted(c store.Catalog, id string, cascade bool, want ...string) {
	f.t.Helper()
	got, err := c.DeleteSession(f.ctx, id, cascade)
	if err != nil || !slices.Equal(got, want) {
		f.t.Fatalf("DeleteSession(%s, cascade %v) = %q, %v; want %q", id, cascade, got, err, want)
	}
	for _, id := range want {
		f.wantGone(id)
	}
}

// wantGone checks that nothing of a session is left: catalog row, events,
// roots, checkpoints and lineage.
func (f *fixture) wantGone(id string) {
	f.t.Helper()
	f.wantNotFound(id)
	if _, err := f.log.ReadBefore(f.ctx, id, 100, 0); !errors.Is(err, store.ErrSessionNotFound) {
		f.t.Fatalf("ReadBefore(%s) after delete: %v", id, err)
	}
	if rl, ok := f.log.(rootLister); ok {
		if got, err := rl.Roots(f.ctx, id); !errors.Is(err, store.ErrSessionNotFound) {
			f.t.Fatalf("Roots(%s) after delete = %v, %v", id, got, err)
		}
	}
	if cps, ok := f.log.(store.Checkpoints); ok {
		f.wantNoCheckpoint(cps, id, 0)
	}
	if src, err := f.log.(store.Catalog).Source(f.ctx, id); !errors.Is(err, store.ErrSessionNotFound) {
		f.t.Fatalf("Source(%s) after delete = %+v, %v", id, src, err)
	}
	ls, err := f.log.Sessions(f.ctx, "", 0)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, l := range ls {
		if l.SessionID == id {
			f.t.Fatalf("deleted session %s is still listed", id)
		}
	}
}

func testDeleteClosedOnly(f *fixture) {
	c := f.catalog()
	d, other := f.put("held by the session"), f.put("held by another")
	f.append("s", 0, opened("s", 1), refs(2, textRef(d)))
	f.closed("keep", other)
	if cps, ok := f.log.(store.Checkpoints); ok {
		f.putCheckpoint(cps, "s", 2, f.put("checkpoint of s"))
	}
	_, err := c.DeleteSession(f.ctx, "s", false)
	var nc *store.NotClosedError
	if !errors.As(err, &nc) || !errors.Is(err, store.ErrSessionNotClosed) || nc.SessionID != "s" || nc.Status != core.SessionStatusOpen {
		f.t.Fatalf("deleting an open session: %v (%T), want a *NotClosedError", err, err)
	}
	f.wantSeqs("events after a refused delete", f.readAfter("s", 0, 0), 1, 2)
	if _, err := c.DeleteSession(f.ctx, "ghost", true); !errors.Is(err, store.ErrSessionNotFound) {
		f.t.Fatalf("deleting an unknown session: %v", err)
	}
	// A log that never opened a session is not closed either.
	f.append("raw", 0, note("raw 1"))
	if _, err := c.DeleteSession(f.ctx, "raw", false); !errors.As(err, &nc) {
		f.t.Fatalf("deleting a session that never opened: %v", err)
	}

	f.closeSession("s")
	f.wantDeleted(c, "s", false, "s")
	// The blobs stay, for a collector; other sessions are untouched.
	for _, b := range []content.Digest{d, other} {
		if _, err := f.blobs.Get(f.ctx, b); err != nil {
			f.t.Fatalf("blob %s after the delete: %v", b, err)
		}
	}
	f.wantSeqs("another session", f.readAfter("keep", 0, 0), 1, 2, 3)
	if rl, ok := f.log.(rootLister); ok {
		if got, err := rl.Roots(f.ctx, "keep"); err != nil || !slices.Equal(got, []content.Digest{other}) {
			f.t.Fatalf("Roots(keep) = %v, %v", got, err)
		}
	}
	// The id is free again, for a session with nothing of the old one.
	f.append("s", 0, opened("s", 50))
	f.wantSeqs("a new session under the id", f.readAfter("s", 0, 0), 1)
	if cps, ok := f.log.(store.Checkpoints); ok {
		f.wantNoCheckpoint(cps, "s", 0)
	}
	if rl, ok := f.log.(rootLister); ok {
		if got, err := rl.Roots(f.ctx, "s"); err != nil || len(got) != 0 {
			f.t.Fatalf("Roots of the new session = %v, %v", got, err)
		}
	}
}

func testDeleteWithForks(f *fixture) {
	c := f.catalog()
	d := f.put("root ref")
	f.closed("root", d)
	f.fork(c, "f1", "root", 2)
	f.append("f1", 2, refs(3, textRef(f.put("f1 ref"))))
	f.fork(c, "f2", "f1", 3)
	f.fork(c, "f3", "root", 1)
	f.source("clone", 1)
	if err := c.RecordClone(f.ctx, "clone", "root"); err != nil {
		f.t.Fatal(err)
	}
	var hf *store.HasForksError
	_, err := c.DeleteSession(f.ctx, "root", false)
	if !errors.As(err, &hf) || !errors.Is(err, store.ErrSessionHasForks) || hf.SessionID != "root" || !slices.Equal(hf.Forks, []string{"f1", "f3"}) {
		f.t.Fatalf("deleting a session with forks: %v (%T), want a *HasForksError naming f1 and f3", err, err)
	}
	var nc *store.NotClosedError
	if _, err := c.DeleteSession(f.ctx, "root", true); !errors.As(err, &nc) || nc.SessionID != "f1" {
		f.t.Fatalf("cascade over open forks: %v, want a *NotClosedError naming f1", err)
	}
	f.closeSession("f1")
	f.closeSession("f3")
	if _, err := c.DeleteSession(f.ctx, "root", true); !errors.As(err, &nc) || nc.SessionID != "f2" {
		f.t.Fatalf("cascade over an open fork of a fork: %v, want a *NotClosedError naming f2", err)
	}
	if _, err := c.DeleteSession(f.ctx, "f1", false); !errors.As(err, &hf) || !slices.Equal(hf.Forks, []string{"f2"}) {
		f.t.Fatalf("deleting f1 alone: %v, want a *HasForksError naming f2", err)
	}
	for _, id := range []string{"root", "f1", "f2", "f3", "clone"} {
		f.session(id) // all still there
	}
	f.closeSession("f2")
	// A leaf fork can go alone; its source keeps its events.
	f.wantDeleted(c, "f3", false, "f3")
	f.wantSeqs("root after its fork went", f.readAfter("root", 0, 0), 1, 2, 3)
	f.wantDeleted(c, "root", true, "root", "f1", "f2")
	// A clone inherits nothing: it stays, and so does its lineage.
	f.wantSeqs("the clone", f.readAfter("clone", 0, 0), 1)
	if src, err := c.Source(f.ctx, "clone"); err != nil || src == nil || *src != (store.Source{SessionID: "root"}) {
		f.t.Fatalf("clone lineage after its source went: %+v, %v", src, err)
	}
	if _, err := f.blobs.Get(f.ctx, d); err != nil {
		f.t.Fatalf("blob after the cascade: %v", err)
	}
	// With its forks gone a session can be deleted alone.
	f.closed("p", d)
	f.fork(c, "q", "p", 3)
	f.closeSession("q")
	if _, err := c.DeleteSession(f.ctx, "q", true); err != nil {
		f.t.Fatalf("cascade from a closed leaf fork: %v", err)
	}
	f.wantDeleted(c, "p", false, "p")
}

func testSessionsNewestFirst(f *fixture) {
	c := f.catalog()
	if ls, err := c.SessionsBefore(f.ctx, nil, 0); err != nil || len(ls) != 0 {
		f.t.Fatalf("SessionsBefore on an empty log = %+v, %v", ls, err)
	}
	for _, s := range []struct {
		id string
		at int64
	}{{"a", 300}, {"b", 100}, {"c", 300}, {"d", 200}, {"e", 300}} {
		f.append(s.id, 0, opened(s.id, s.at))
	}
	// A fork is listed by its own creation time (5001).
	f.fork(c, "f", "b", 1)
	page := func(before *store.SessionCursor, limit int, want ...string) {
		f.t.Helper()
		ls, err := c.SessionsBefore(f.ctx, before, limit)
		if err != nil {
			f.t.Fatalf("SessionsBefore(%v, %d): %v", before, limit, err)
		}
		var got []string
		for _, l := range ls {
			got = append(got, l.SessionID)
		}
		if !slices.Equal(got, want) {
			f.t.Fatalf("SessionsBefore(%v, %d) = %q, want %q", before, limit, got, want)
		}
	}
	page(nil, 0, "f", "e", "c", "a", "d", "b")
	page(nil, 2, "f", "e")
	page(&store.SessionCursor{CreatedAtMs: 300, SessionID: "e"}, 2, "c", "a")
	page(&store.SessionCursor{CreatedAtMs: 300, SessionID: "a"}, 2, "d", "b")
	page(&store.SessionCursor{CreatedAtMs: 100, SessionID: "b"}, 2)
	page(&store.SessionCursor{CreatedAtMs: 300, SessionID: "d"}, 0, "c", "a", "d", "b")
	page(&store.SessionCursor{CreatedAtMs: 250, SessionID: ""}, 1, "d")
	// Walking with CursorOf visits each session once.
	var all []string
	var cur *store.SessionCursor
	for {
		ls, err := c.SessionsBefore(f.ctx, cur, 4)
		if err != nil {
			f.t.Fatal(err)
		}
		if len(ls) == 0 {
			break
		}
		for _, l := range ls {
			all = append(all, l.SessionID)
		}
		next := store.CursorOf(ls[len(ls)-1])
		cur = &next
	}
	if !slices.Equal(all, []string{"f", "e", "c", "a", "d", "b"}) {
		f.t.Fatalf("walked %q", all)
	}
}
