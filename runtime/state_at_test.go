package runtime_test

import (
	"errors"
	"testing"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
)

// The context at any seq equals a replay of the log's prefix, from a
// checkpoint at or below it when there is one.
func TestStateAtEqualsReplayOfThePrefix(t *testing.T) {
	s := newScripted(t, "s1", "r")
	s.script(2)
	evs := s.events()
	// A checkpoint in the middle: reads at or after it start from it.
	mid := replayTo(t, evs, len(evs)/2)
	if err := runtime.WriteCheckpoint(s.ctx, s.log, s.blobs, mid); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= len(evs); n++ {
		st, err := runtime.StateAt(s.ctx, s.log, s.log, s.blobs, "s1", int64(n))
		if err != nil {
			t.Fatalf("at %d: %v", n, err)
		}
		if got, want := encode(t, st), encode(t, replayTo(t, evs, n)); string(got) != string(want) {
			t.Fatalf("state at %d differs from the replay of the first %d events", n, n)
		}
	}
	if _, err := runtime.StateAt(s.ctx, s.log, s.log, s.blobs, "s1", int64(len(evs)+1)); !errors.Is(err, runtime.ErrSeqPastHead) {
		t.Fatalf("past the head: %v", err)
	}
}

func TestDiffContextNamesTheEventOfEveryChange(t *testing.T) {
	s := newScripted(t, "s1", "r")
	s.script(2)
	evs := s.events()
	d, err := runtime.DiffContext(s.ctx, s.log, s.log, s.blobs, "s1", 0, int64(len(evs)))
	if err != nil {
		t.Fatal(err)
	}
	// Replaying the changes over an empty context gives the final context.
	live := map[string]bool{}
	for _, c := range d.Added {
		live[c.Entry.ID] = true
	}
	for _, c := range d.Removed {
		if !live[c.Entry.ID] {
			t.Fatalf("entry %s removed at seq %d without being added", c.Entry.ID, c.Seq)
		}
		delete(live, c.Entry.ID)
	}
	final := replayTo(t, evs, len(evs)).Context()
	if len(live) != len(final) {
		t.Fatalf("%d entries live after the diff, the context has %d", len(live), len(final))
	}
	for _, e := range final {
		if !live[e.ID] {
			t.Fatalf("entry %s missing from the diff", e.ID)
		}
	}
	// Every change names an event that is a context change.
	for _, c := range append(append([]runtime.ContextChange{}, d.Added...), d.Removed...) {
		switch evs[c.Seq-1].Kind {
		case core.KindContextEntriesApplied, core.KindContextEntriesRemoved, core.KindContextKeysRemoved, core.KindContextCompacted:
		default:
			t.Fatalf("change of %s attributed to seq %d (%s)", c.Entry.ID, c.Seq, evs[c.Seq-1].Kind)
		}
	}
	if len(d.Removed) == 0 {
		t.Fatal("the script removes notes, the diff shows no removal")
	}
	// A sub-range shows only its own changes.
	part, err := runtime.DiffContext(s.ctx, s.log, s.log, s.blobs, "s1", int64(len(evs)/2), int64(len(evs)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range part.Added {
		if c.Seq <= int64(len(evs)/2) {
			t.Fatalf("change at seq %d outside the range", c.Seq)
		}
	}
	if len(part.Added) >= len(d.Added) {
		t.Fatalf("the second half added %d entries, the whole log %d", len(part.Added), len(d.Added))
	}
}

func TestDiffContextShowsSupersededCatalogs(t *testing.T) {
	s := newScripted(t, "s1", "r")
	s.script(1)
	from := s.events()[len(s.events())-1].Seq
	cat := func(text string) core.EntryInput {
		e := s.entry(core.EntryCatalog, "", text)
		e.Key = "catalog.skills"
		return e
	}
	s.admit(core.AppendContext{AtMs: s.tick(), Entries: []core.EntryInput{cat("v1")}, Source: core.SourceRuntime})
	s.admit(core.AppendContext{AtMs: s.tick(), Entries: []core.EntryInput{cat("v2")}, Source: core.SourceRuntime})
	to := s.events()[len(s.events())-1].Seq
	d, err := runtime.DiffContext(s.ctx, s.log, s.log, s.blobs, "s1", from, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Added) != 2 || len(d.Superseded) != 1 || d.Superseded[0].Entry.Preview != "v1" || d.Superseded[0].By != d.Added[1].Entry.ID || d.Superseded[0].Seq != to {
		t.Fatalf("diff %+v", d)
	}
}
