package core_test

import (
	"testing"

	"github.com/cairn-agents/cairn/core"
)

func failGeneration(h *harness) {
	h.t.Helper()
	g := h.expectGenerate()
	h.mustAdmit(core.GenerationResult{AtMs: h.tick(), RunID: g.RunID, Turn: g.Turn, Finish: "error",
		Failure: &core.Failure{Kind: "provider_error", Message: "provider unavailable", Ref: &core.ModelFailedRef}})
}

// userTexts lists the previews of the user messages a generation sees.
func userTexts(g *core.GenerateWork) []string {
	var out []string
	for _, e := range g.Entries {
		if e.Role == core.RoleUser {
			out = append(out, e.Preview)
		}
	}
	return out
}

// A failed run goes on from where it stopped: the retry is a new run with
// no input whose first turn sees the failed run's input once, as the
// failure left the context. Retrying again answers the same retry.
func TestSpec_RetryRunGoesOnFromWhereTheFailedRunStopped(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("summarise the log")})
	failGeneration(h)
	h.expectIdle()
	if r := h.state().Run("r1"); r.Status != core.StatusFailed {
		t.Fatalf("r1 is %s", r.Status)
	}

	h.rejection(core.StartRun{AtMs: h.tick(), RunID: "r1b", RetryOf: "r1", Input: input("again")}, core.RejectInvalidInput)
	h.rejection(core.StartRun{AtMs: h.tick(), RunID: "r1b", RetryOf: "nope"}, core.RejectUnknownReference)
	a := h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1b", RetryOf: "r1"})
	if a.RunID != "r1b" || a.Status != core.StatusRunning || a.Duplicate {
		t.Fatalf("retry admission %+v", a)
	}
	var accepted core.RunAccepted
	for _, ev := range h.events {
		if ev.Kind == core.KindRunAccepted {
			accepted = payload[core.RunAccepted](t, ev)
		}
	}
	if p := accepted; p.RunID != "r1b" || p.RetryOf != "r1" || len(p.Input) != 0 {
		t.Fatalf("the retry's run.accepted %+v", p)
	}
	g := h.expectGenerate()
	if g.RunID != "r1b" || g.Turn != 1 {
		t.Fatalf("retry's work %+v", g)
	}
	if got := userTexts(g); len(got) != 1 || got[0] != "summarise the log" {
		t.Fatalf("the retry's first turn sees user messages %q, want the failed run's input once", got)
	}
	// A client that lost the answer retries the retry: same run.
	if a := h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1c", RetryOf: "r1"}); a.RunID != "r1b" || !a.Duplicate {
		t.Fatalf("a repeated retry %+v, want r1b as a duplicate", a)
	}
	h.answer("the summary")
	h.expectIdle()
	if r := h.state().Run("r1b"); r.Status != core.StatusCompleted || r.RetryOf != "r1" {
		t.Fatalf("the retry ended %+v", r)
	}
	h.rejection(core.StartRun{AtMs: h.tick(), RunID: "r1d", RetryOf: "r1b"}, core.RejectRunNotRetryable)

	// The retry survives a checkpoint.
	data, err := core.EncodeCheckpoint(h.state())
	if err != nil {
		t.Fatal(err)
	}
	restored, err := core.DecodeCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	if r := restored.Run("r1b"); r == nil || r.RetryOf != "r1" {
		t.Fatalf("after a checkpoint r1b is %+v", r)
	}
}

// Only the last run can be retried: a later run moved the context on. A run
// that failed before its input entered context has nothing to go on from.
func TestSpec_RetryRunRefusesAnOlderOrUnstartedRun(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	failGeneration(h)
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("next")})
	h.answer("ok")
	h.rejection(core.StartRun{AtMs: h.tick(), RunID: "r1b", RetryOf: "r1"}, core.RejectRunNotRetryable)

	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r3", Input: input("a")})
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r4", Input: input("b")}) // queued behind r3
	h.mustAdmit(core.FailRun{AtMs: h.tick(), RunID: "r4", Failure: core.Failure{Kind: "result_not_admitted", Message: "m"}})
	h.rejection(core.StartRun{AtMs: h.tick(), RunID: "r4b", RetryOf: "r4"}, core.RejectRunNotRetryable)
}
