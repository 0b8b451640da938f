package storetest

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

func (f *fixture) importer() store.Importer {
	f.t.Helper()
	if im, ok := f.log.(store.Importer); ok {
		return im
	}
	f.t.Skip("backend does not import sessions")
	return nil
}

// chunks yields proposals a chunk of size n at a time.
func chunks(n int, ps ...core.Proposal) func(yield func([]core.Proposal) error) error {
	return func(yield func([]core.Proposal) error) error {
		for i := 0; i < len(ps); i += n {
			if err := yield(ps[i:min(i+n, len(ps))]); err != nil {
				return err
			}
		}
		return nil
	}
}

// notes are the events "<id> <from>" … "<id> <to>".
func notes(id string, from, to int) []core.Proposal {
	var out []core.Proposal
	for i := from; i <= to; i++ {
		out = append(out, note(fmt.Sprintf("%s %d", id, i)))
	}
	return out
}

// An import creates sessions as their own appends and forks would have:
// the same seqs across chunks, roots, lifecycle, and lineage to a session
// of the same import.
func testImportCreatesSessionsWithLineage(f *fixture) {
	c := f.catalog()
	im := f.importer()
	f.append("older", 0, opened("older", 500)) // created before a, listed after it
	d := f.put("imported blob")
	a := append([]core.Proposal{opened("a", 1000), refs(1001, textRef(d))}, notes("a", 3, 6)...)
	ws := f.put("a workspace's head")
	err := im.Import(f.ctx, store.ImportBatch{Snapshots: []content.Digest{ws}, Workspaces: []store.Workspace{{Name: "docs", Head: ws}}, Sessions: []store.ImportedSession{
		{SessionID: "a", Events: chunks(4, a...)},
		{SessionID: "b", Fork: &store.ForkRequest{SessionID: "b", Source: "a", AtSeq: 4, AtMs: 7000, Projection: forkProjection},
			Events: chunks(1, notes("b", 5, 6)...)},
		{SessionID: "c", CloneOf: "a", Events: chunks(10, opened("c", 8000))},
	}})
	if err != nil {
		f.t.Fatalf("Import: %v", err)
	}
	evs, err := f.log.ReadAfter(f.ctx, "a", 0, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	f.wantSeqs("a", evs, 1, 2, 3, 4, 5, 6)
	if evs[1].ObservedAtMs != 1001 || evs[5].Kind != "test.note" {
		f.t.Fatalf("a's events = %s, %s", show(evs[1]), show(evs[5]))
	}
	fork, err := f.log.ReadAfter(f.ctx, "b", 0, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	f.wantTexts("b", fork[2:], 3, "a", "a", "b", "b")
	if src, err := c.Source(f.ctx, "b"); err != nil || src == nil || *src != (store.Source{SessionID: "a", AtSeq: 4}) {
		f.t.Fatalf("b's lineage = %+v, %v", src, err)
	}
	if src, err := c.Source(f.ctx, "c"); err != nil || src == nil || *src != (store.Source{SessionID: "a"}) {
		f.t.Fatalf("c's lineage = %+v, %v", src, err)
	}
	for id, head := range map[string]int64{"a": 6, "b": 6, "c": 1} {
		life, err := f.log.Session(f.ctx, id)
		if err != nil || life.Head != head || life.Status != core.SessionStatusOpen {
			f.t.Fatalf("%s's lifecycle = %+v, %v", id, life, err)
		}
	}
	if rl, ok := f.log.(rootLister); ok {
		got, err := rl.Roots(f.ctx, "a")
		if err != nil || !slices.Equal(got, []content.Digest{d}) {
			f.t.Fatalf("a's roots = %v, %v", got, err)
		}
	}
	if wss, ok := f.log.(store.Workspaces); ok {
		if w, err := wss.Workspace(f.ctx, "docs"); err != nil || w.Head != ws || w.Revision != 1 {
			f.t.Fatalf("the imported workspace = %+v, %v", w, err)
		}
		if _, err := wss.Snapshot(f.ctx, ws); err != nil {
			f.t.Fatalf("the imported snapshot: %v", err)
		}
	}
	// The listing orders them by their creation times, newest first.
	ls, err := c.SessionsBefore(f.ctx, nil, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	var order []string
	for _, l := range ls {
		order = append(order, l.SessionID)
	}
	if !slices.Equal(order, []string{"c", "b", "a", "older"}) {
		f.t.Fatalf("sessions newest first = %v, want [c b a older]", order)
	}
	// The imported sessions are ordinary ones: they append on.
	f.append("b", 6, note("b 7"))
}

// A failure anywhere in an import leaves none of its sessions and
// workspaces: a taken id or workspace name, a ref to an absent blob, a
// source that does not exist, or events that stop with an error after
// some chunks went in.
func testImportIsAllOrNothing(f *fixture) {
	im := f.importer()
	f.append("taken", 0, opened("taken", 1))
	absentBlob := content.Sum([]byte("never stored"))
	wss, _ := f.log.(store.Workspaces)
	head := f.put("a head")
	if wss != nil {
		if _, err := wss.CreateWorkspace(f.ctx, "taken", head); err != nil {
			f.t.Fatal(err)
		}
	}
	fresh := []store.Workspace{{Name: "fresh", Head: head}}
	cases := map[string]struct {
		sessions   []store.ImportedSession
		want       func(error) bool
		workspaces []store.Workspace
	}{
		"taken id": {[]store.ImportedSession{
			{SessionID: "new", Events: chunks(1, opened("new", 1))},
			{SessionID: "taken", Events: chunks(1, opened("taken", 1))},
		}, func(err error) bool { return errors.Is(err, store.ErrSessionExists) }, fresh},
		"absent blob": {[]store.ImportedSession{
			{SessionID: "new", Events: chunks(1, opened("new", 1), note("new 2"))},
			{SessionID: "other", Events: chunks(1, opened("other", 1), refs(2, textRef(absentBlob)))},
		}, func(err error) bool {
			var m *blob.MissingError
			return errors.As(err, &m) && slices.Equal(m.Digests, []content.Digest{absentBlob})
		}, fresh},
		"absent source": {[]store.ImportedSession{
			{SessionID: "new", Events: chunks(1, opened("new", 1))},
			{SessionID: "fork", Fork: &store.ForkRequest{SessionID: "fork", Source: "nowhere", AtSeq: 1, Projection: forkProjection}, Events: chunks(1)},
		}, func(err error) bool { return errors.Is(err, store.ErrSessionNotFound) }, fresh},
		"events cut off": {[]store.ImportedSession{
			{SessionID: "new", Events: func(yield func([]core.Proposal) error) error {
				if err := yield([]core.Proposal{opened("new", 1), note("new 2")}); err != nil {
					return err
				}
				return errors.New("the stream ended")
			}},
		}, func(err error) bool { return err != nil && err.Error() == "the stream ended" }, fresh},
		"taken workspace": {[]store.ImportedSession{
			{SessionID: "new", Events: chunks(1, opened("new", 1))},
		}, func(err error) bool { return errors.Is(err, store.ErrWorkspaceExists) }, append(fresh, store.Workspace{Name: "taken", Head: head})},
	}
	for name, tc := range cases {
		b := store.ImportBatch{Sessions: tc.sessions}
		if wss != nil {
			b.Workspaces = tc.workspaces
		} else if name == "taken workspace" {
			continue
		}
		if err := im.Import(f.ctx, b); !tc.want(err) {
			f.t.Fatalf("%s: Import = %v", name, err)
		}
		if wss != nil {
			if _, err := wss.Workspace(f.ctx, "fresh"); !errors.Is(err, store.ErrWorkspaceNotFound) {
				f.t.Fatalf("%s: the refused import created a workspace (%v)", name, err)
			}
		}
		for _, id := range []string{"new", "other", "fork"} {
			f.wantNotFound(id)
		}
		if life, err := f.log.Session(f.ctx, "taken"); err != nil || life.Head != 1 {
			f.t.Fatalf("%s: the taken session = %+v, %v", name, life, err)
		}
	}
}
