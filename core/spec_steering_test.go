package core_test

import (
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

func hasPreview(entries []core.Entry, preview string) bool {
	for _, e := range entries {
		if e.Preview == preview {
			return true
		}
	}
	return false
}

func TestSpec_SteeringEntersContextAtNextTurnBoundary(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("draft notes")})
	g1 := h.expectGenerate()

	a := h.mustAdmit(core.Steer{AtMs: h.tick(), SteeringID: "st1", Input: input("mention the fix")})
	if a.RunID != "r1" {
		t.Fatalf("steering went to run %q", a.RunID)
	}
	// Durable at once …
	ev := h.events[len(h.events)-1]
	if ev.Kind != core.KindRunSteeringAccepted {
		t.Fatalf("last event %s", ev.Kind)
	}
	if p := payload[core.RunSteeringAccepted](t, ev); p.RunID != "r1" || p.SteeringID != "st1" || len(p.Input) != 1 {
		t.Fatalf("steering payload %+v", p)
	}
	// … but not in context, and not in the request already in flight.
	if hasPreview(h.state().Context(), "mention the fix") || hasPreview(g1.Entries, "mention the fix") {
		t.Fatal("steering entered context before the turn boundary")
	}
	again := h.expectGenerate()
	if again.Turn != 1 || again.Fingerprint != g1.Fingerprint || hasPreview(again.Entries, "mention the fix") {
		t.Fatal("steering changed the generation in flight")
	}

	h.answer("draft 1")
	g2 := h.expectGenerate()
	if g2.Turn != 2 {
		t.Fatalf("turn %d, want 2", g2.Turn)
	}
	got := contextOf(h.state())
	want := []string{"instructions:be brief", "message/user:draft notes", "message/assistant:draft 1", "message/user:mention the fix"}
	if !slices.Equal(got, want) {
		t.Fatalf("context\n got  %q\n want %q", got, want)
	}
	for _, e := range h.state().Context() {
		if e.Preview == "mention the fix" && (e.Source != core.SourceUser || e.RunID != "r1" || e.Origin != "user:") {
			t.Fatalf("steering entry %+v", e)
		}
	}
	if len(h.state().Run("r1").Steering) != 0 {
		t.Fatal("steering still pending after the turn started")
	}
	h.answer("draft 2")
	h.expectIdle()
	r := h.state().Run("r1")
	if r.Status != core.StatusCompleted || *r.Output != assistant("draft 2").Content {
		t.Fatalf("run %+v", r)
	}
}

func TestSpec_RunWithUnconsumedSteeringTakesAnotherTurnInsteadOfCompleting(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	g := h.expectGenerate()
	h.mustAdmit(core.Steer{AtMs: h.tick(), SteeringID: "st1", Input: input("s1")})
	h.mustAdmit(core.Steer{AtMs: h.tick(), SteeringID: "st2", Input: input("s2", "s3")})
	mark := len(h.events)
	h.mustAdmit(core.GenerationResult{AtMs: h.tick(), RunID: g.RunID, Turn: g.Turn, Entries: []core.EntryInput{assistant("a1")}, Finish: "stop"})
	if slices.Contains(h.kindsSince(mark), core.KindRunCompleted) {
		t.Fatal("run completed with unconsumed steering")
	}
	requireKinds(t, h.kindsSince(mark),
		core.KindTurnGenerationCompleted, core.KindContextEntriesApplied, core.KindTurnCompleted,
		core.KindTurnStarted, core.KindContextEntriesApplied, core.KindTurnPlanned, core.KindTurnGenerationRequested)
	// Both steering messages enter in one context change, in admission order.
	applied := payload[core.ContextEntriesApplied](t, h.events[mark+4])
	var previews []string
	for _, e := range applied.Entries {
		previews = append(previews, e.Preview)
	}
	requireKinds(t, previews, "s1", "s2", "s3")
}

func TestSpec_SteeringDuringToolBatchEntersAfterToolResults(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.callTools(call("c1", "a"))
	w := h.expectTools()
	h.mustAdmit(core.Steer{AtMs: h.tick(), SteeringID: "st1", Input: input("hurry")})
	if w2 := h.expectTools(); len(w2.Calls) != 1 {
		t.Fatal("steering disturbed the tool batch")
	}
	h.mustAdmit(toolResult(h.tick(), w, "c1", core.CallOK, "r"))
	g := h.expectGenerate()
	got := contextOf(h.state())
	want := []string{"instructions:be brief", "message/user:q", "message/assistant:let me check", "tool_call/c1:", "tool_result/c1:r", "message/user:hurry"}
	if !slices.Equal(got, want) || g.Turn != 2 {
		t.Fatalf("context\n got  %q\n want %q", got, want)
	}
}

func TestSpec_SteeringNeedsAnActiveRun(t *testing.T) {
	h := newHarness(t, testConfig())
	h.rejection(core.Steer{AtMs: h.tick(), SteeringID: "st1", Input: input("x")}, core.RejectNoActiveRun)

	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.rejection(core.Steer{AtMs: h.tick(), SteeringID: "st1"}, core.RejectInvalidInput)
	h.rejection(core.Steer{AtMs: h.tick(), Input: input("x")}, core.RejectInvalidInput)
	h.answer("a")
	h.expectIdle()
	h.rejection(core.Steer{AtMs: h.tick(), SteeringID: "st2", Input: input("late")}, core.RejectNoActiveRun)
}

func TestSpec_SteeringAfterCancelIsRejected(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.expectGenerate()
	h.mustAdmit(core.CancelRun{AtMs: h.tick(), RunID: "r1"})
	h.rejection(core.Steer{AtMs: h.tick(), SteeringID: "st1", Input: input("x")}, core.RejectNoActiveRun)
}
