package core_test

import (
	"testing"

	"github.com/cairn-agents/cairn/core"
)

// requireEveryToolCallAnswered checks that each tool_call entry in context
// has a tool_result entry for the same call, and vice versa.
func requireEveryToolCallAnswered(t tb, s *core.State) {
	t.Helper()
	calls, results := map[string]int{}, map[string]int{}
	for _, e := range s.Context() {
		switch e.Kind {
		case core.EntryToolCall:
			calls[e.CallID]++
		case core.EntryToolResult:
			results[e.CallID]++
		}
	}
	for id, n := range calls {
		if results[id] != n {
			t.Fatalf("tool call %s has %d results in context", id, results[id])
		}
	}
	for id := range results {
		if calls[id] == 0 {
			t.Fatalf("tool result %s has no call in context", id)
		}
	}
}

func TestSpec_CancelDuringToolBatchGivesEveryUnfinishedCallACancelledResult(t *testing.T) {
	h := newHarness(t, testConfig("a", "b", "c"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.callTools(call("c1", "a"), call("c2", "b"), call("c3", "c"))
	w := h.expectTools()
	h.mustAdmit(toolResult(h.tick(), w, "c2", core.CallOK, "done"))

	mark := len(h.events)
	a := h.mustAdmit(core.CancelRun{AtMs: h.tick(), RunID: "r1", Reason: "user"})
	if a.Status != core.StatusCancelled || a.RunID != "r1" {
		t.Fatalf("admission %+v", a)
	}
	requireKinds(t, h.kindsSince(mark),
		core.KindRunCancelRequested,
		core.KindToolCallCompleted, core.KindToolCallCompleted,
		// c1, c2 (finished before the cancel) and c3, in call order
		core.KindContextEntriesApplied, core.KindContextEntriesApplied, core.KindContextEntriesApplied,
		core.KindToolBatchCompleted, core.KindTurnCompleted, core.KindRunCancelled)
	for _, i := range []int{1, 2} {
		p := payload[core.ToolCallCompleted](t, h.events[mark+i])
		if p.Status != core.CallCancelled || p.Result != core.ToolCancelledRef {
			t.Fatalf("call completion %+v", p)
		}
	}
	if tc := payload[core.TurnCompleted](t, h.events[mark+7]); tc.Outcome != core.TurnOutcomeCancelled {
		t.Fatalf("turn outcome %s", tc.Outcome)
	}
	if rc := payload[core.RunCancelRequested](t, h.events[mark]); rc.Reason != "user" {
		t.Fatalf("cancel reason %q", rc.Reason)
	}

	results := map[string]core.Entry{}
	for _, e := range h.state().Context() {
		if e.Kind == core.EntryToolResult {
			results[e.CallID] = e
		}
	}
	for _, id := range []string{"c1", "c3"} {
		e := results[id]
		if e.Content != core.ToolCancelledRef || e.Source != core.SourceRuntime || e.Preview != "cancelled" {
			t.Fatalf("result for %s: %+v", id, e)
		}
	}
	if results["c2"].Preview != "done" {
		t.Fatalf("finished call's result changed: %+v", results["c2"])
	}
	requireEveryToolCallAnswered(t, h.state())

	// No further model turn, and late results are stale.
	h.expectIdle()
	if n := len(h.ofKind(core.KindTurnStarted)); n != 1 {
		t.Fatalf("%d turns", n)
	}
	h.rejection(toolResult(h.tick(), w, "c1", core.CallOK, "late"), core.RejectStaleResult)
	r := h.state().Run("r1")
	if r.Status != core.StatusCancelled || !r.CancelRequested || h.state().Active != "" {
		t.Fatalf("run %+v", r)
	}
}

func TestSpec_CancelDuringGenerationRejectsLateResultAsStale(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	g := h.expectGenerate()
	mark := len(h.events)
	h.mustAdmit(core.CancelRun{AtMs: h.tick(), RunID: "r1"})
	requireKinds(t, h.kindsSince(mark), core.KindRunCancelRequested, core.KindTurnCompleted, core.KindRunCancelled)
	if in := h.next(); in.Kind != core.IntentIdle {
		t.Fatalf("intent %s after cancel, want idle (no generate)", in.Kind)
	}
	h.rejection(generationWithCalls(h.tick(), g, call("c1", "a")), core.RejectStaleResult)
	for _, e := range h.state().Context() {
		if e.Source == core.SourceModel {
			t.Fatal("a late generation entered context")
		}
	}
}

func TestSpec_CancelOfQueuedRunEndsItWithoutTouchingTheActiveRun(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("one")})
	h.expectGenerate()
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("two")})
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r3", Input: input("three")})
	mark := len(h.events)
	a := h.mustAdmit(core.CancelRun{AtMs: h.tick(), RunID: "r2"})
	if a.Status != core.StatusCancelled {
		t.Fatalf("admission %+v", a)
	}
	requireKinds(t, h.kindsSince(mark), core.KindRunCancelRequested, core.KindRunCancelled)
	s := h.state()
	if s.Active != "r1" || !equalStrings(s.Queue, []string{"r3"}) || s.Run("r2").Status != core.StatusCancelled {
		t.Fatalf("active %q queue %q r2 %s", s.Active, s.Queue, s.Run("r2").Status)
	}
	if g := h.expectGenerate(); g.RunID != "r1" {
		t.Fatal("the active run was disturbed")
	}
	h.answer("a1")
	g := h.expectGenerate()
	if g.RunID != "r3" {
		t.Fatalf("next run %s, want r3 (r2 was cancelled)", g.RunID)
	}
	if hasPreview(h.state().Context(), "two") {
		t.Fatal("a cancelled queued run's input entered context")
	}
}

func TestSpec_CancelOfActiveRunStartsTheNextQueuedRun(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("one")})
	h.expectGenerate()
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("two")})
	h.mustAdmit(core.CancelRun{AtMs: h.tick(), RunID: "r1"})
	g := h.expectGenerate()
	if g.RunID != "r2" || g.Turn != 1 {
		t.Fatalf("generation %s/%d", g.RunID, g.Turn)
	}
}

func TestSpec_CancelBetweenTurnsEndsTheRun(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.callTools(call("c1", "a"))
	w := h.expectTools()
	// Commit the tool result but not the next turn's opening.
	if _, err := h.d.Admit(toolResult(h.tick(), w, "c1", core.CallOK, "x")); err != nil {
		t.Fatal(err)
	}
	h.commit(h.d.Next(h.tick()))
	if r := h.state().Run("r1"); !r.Turn.Completed {
		t.Fatal("turn not completed")
	}
	mark := len(h.events)
	h.mustAdmit(core.CancelRun{AtMs: h.tick(), RunID: "r1"})
	requireKinds(t, h.kindsSince(mark), core.KindRunCancelRequested, core.KindRunCancelled)
	h.expectIdle()
	requireEveryToolCallAnswered(t, h.state())
}

func TestSpec_CancelOfFinishedRunIsANoOp(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.answer("a")
	h.expectIdle()
	before := len(h.events)
	a := h.mustAdmit(core.CancelRun{AtMs: h.tick(), RunID: "r1"})
	if a.Status != core.StatusCompleted || len(a.Proposals) != 0 || len(h.events) != before {
		t.Fatalf("cancel of a completed run: %+v", a)
	}
	h.rejection(core.CancelRun{AtMs: h.tick(), RunID: "nope"}, core.RejectUnknownReference)
}
