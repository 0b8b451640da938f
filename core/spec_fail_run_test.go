package core_test

import (
	"testing"

	"github.com/cairn-agents/cairn/core"
)

// A host that cannot admit a result ends the run as failed, with a typed
// failure, and the session moves on to its next run.
func TestSpec_FailRunEndsARunWhoseResultCannotBeAdmitted(t *testing.T) {
	h := newHarness(t, testConfig("a", "b"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("next")})
	h.callTools(call("c1", "a"), call("c2", "b"))
	w := h.expectTools()
	h.mustAdmit(toolResult(h.tick(), w, "c1", core.CallOK, "done"))

	f := core.Failure{Kind: "result_not_admitted", Message: "the result of call c2 could not be stored"}
	mark := len(h.events)
	a := h.mustAdmit(core.FailRun{AtMs: h.tick(), RunID: "r1", Failure: f})
	if a.Status != core.StatusFailed {
		t.Fatalf("admission %+v", a)
	}
	requireKinds(t, h.kindsSince(mark)[:6],
		core.KindToolCallCompleted, core.KindContextEntriesApplied, core.KindContextEntriesApplied, // c1's and c2's results
		core.KindToolBatchCompleted, core.KindTurnCompleted, core.KindRunFailed)
	if p := payload[core.ToolCallCompleted](t, h.events[mark]); p.CallID != "c2" || p.Status != core.CallFailed || p.Result != core.ToolFailedRef {
		t.Fatalf("call completion %+v", p)
	}
	if tc := payload[core.TurnCompleted](t, h.events[mark+4]); tc.Outcome != core.TurnOutcomeFailed {
		t.Fatalf("turn outcome %s", tc.Outcome)
	}
	if rf := payload[core.RunFailed](t, h.events[mark+5]); rf.Error != f {
		t.Fatalf("run failure %+v", rf.Error)
	}
	requireEveryToolCallAnswered(t, h.state())
	// The late result is stale, and the next run has started.
	h.rejection(toolResult(h.tick(), w, "c2", core.CallOK, "late"), core.RejectStaleResult)
	if g := h.expectGenerate(); g.RunID != "r2" {
		t.Fatalf("next work %+v", g)
	}
	// Failing a run that is over changes nothing.
	if a := h.mustAdmit(core.FailRun{AtMs: h.tick(), RunID: "r1", Failure: f}); a.Status != core.StatusFailed || len(a.Proposals) != 0 {
		t.Fatalf("second FailRun %+v", a)
	}
}

func TestSpec_FailRunDuringGenerationAndItsBadInput(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	g := h.expectGenerate()
	h.rejection(core.FailRun{AtMs: h.tick(), RunID: "r1"}, core.RejectInvalidInput)
	h.rejection(core.FailRun{AtMs: h.tick(), RunID: "nope", Failure: core.Failure{Kind: "k", Message: "m"}}, core.RejectUnknownReference)
	mark := len(h.events)
	h.mustAdmit(core.FailRun{AtMs: h.tick(), RunID: "r1", Failure: core.Failure{Kind: "result_not_admitted", Message: "m"}})
	requireKinds(t, h.kindsSince(mark), core.KindTurnCompleted, core.KindRunFailed)
	h.rejection(core.GenerationResult{AtMs: h.tick(), RunID: g.RunID, Turn: g.Turn, Finish: "stop", Entries: []core.EntryInput{assistant("late")}}, core.RejectStaleResult)
	h.expectIdle()
}
