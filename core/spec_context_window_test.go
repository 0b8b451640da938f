package core_test

import (
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

// An input larger than the model's window is refused and changes nothing;
// so is one that fits alone but not with the context, when the session has
// no compaction policy. An unknown window (0) refuses nothing.
func TestSpec_ARunThatCannotFitTheWindowIsRefused(t *testing.T) {
	h := newHarness(t, testConfig())
	big := strings.Repeat("x", 400) // about 101 tokens
	head := len(h.events)
	h.rejection(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input(big), ContextWindow: 100}, core.RejectContextWindowExceeded)
	if len(h.events) != head {
		t.Fatal("a refused run changed the log")
	}
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input(strings.Repeat("y", 200)), ContextWindow: 100}) // 51 tokens
	h.answer("ok")
	h.expectIdle()
	// About 51 + 2 in context now: another 51 does not fit.
	h.rejection(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input(strings.Repeat("z", 200)), ContextWindow: 100}, core.RejectContextWindowExceeded)
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input(strings.Repeat("z", 200))})
}

// With a standalone compaction policy the run that would not fit waits for
// a compaction its admission requested, then starts on the compacted
// context.
func TestSpec_ARunThatCannotFitCompactsFirst(t *testing.T) {
	h := newHarness(t, standalone(0))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input(strings.Repeat("y", 200)), ContextWindow: 100})
	h.answer("ok")
	h.expectIdle()
	a := h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input(strings.Repeat("z", 200)), ContextWindow: 100})
	if a.Status != core.StatusQueued {
		t.Fatalf("the run that does not fit is %s, want queued behind a compaction", a.Status)
	}
	in := h.next()
	if in.Kind != core.IntentCompact {
		t.Fatalf("intent %s, want compaction first", in.Kind)
	}
	req := payload[core.CompactionRequested](t, h.ofKind(core.KindCompactionRequested)[0])
	if req.Trigger != core.TriggerContextWindow {
		t.Fatalf("compaction trigger %q", req.Trigger)
	}
	h.mustAdmit(core.CompactionResult{AtMs: h.tick(), CompactionID: in.Compact.CompactionID, ContextRevision: in.Compact.ContextRevision,
		Entries: []core.EntryInput{summary("short")}})
	g := h.expectGenerate()
	if g.RunID != "r2" {
		t.Fatalf("after the compaction %s generates, want r2", g.RunID)
	}
	for _, e := range g.Entries {
		if strings.HasPrefix(e.Preview, "yyyy") {
			t.Fatal("r2's request still holds r1's input: the compaction did not run first")
		}
	}
}
