package runtime_test

import (
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
)

// After a commit, the work the state no longer awaits is cancelled in the
// order it was started (a workflow's history records cancellations in that
// order), and only that work.
func TestInFlight_CancelStaleInStartOrder(t *testing.T) {
	f := runtime.NewInFlight()
	var cancelled []string
	works := []core.Work{{RunID: "run_b", Turn: 1, CallID: "c2"}, {CompactionID: "cmp_1"}, {RunID: "run_a", Turn: 1, CallID: "c1"}, {RunID: "run_a", Turn: 1}}
	for _, w := range works {
		if f.Get(w.Key()) != nil {
			t.Fatalf("%s in flight before it started", w.Key())
		}
		f.Add(w, func() { cancelled = append(cancelled, w.Key()) })
	}
	st := core.NewState()
	st.Compaction = &core.PendingCompaction{ID: "cmp_1"}
	f.CancelStale(st)
	want := []string{works[0].Key(), works[2].Key(), works[3].Key()}
	if !slices.Equal(cancelled, want) {
		t.Fatalf("cancelled %v, want %v", cancelled, want)
	}
	if f.Len() != 1 || f.Get("compact/cmp_1") == nil {
		t.Fatalf("%d in flight after, want the awaited compaction only", f.Len())
	}
	if !f.Remove("compact/cmp_1") || f.Remove("compact/cmp_1") || f.Len() != 0 {
		t.Fatal("Remove does not report whether the flight was there")
	}
}
