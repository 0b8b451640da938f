package core_test

import (
	"testing"

	"github.com/cairn-agents/cairn/core"
)

func TestSpec_OneActiveRunFurtherRunsQueueFIFO(t *testing.T) {
	h := newHarness(t, testConfig())
	if a := h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("one")}); a.Status != core.StatusRunning {
		t.Fatalf("r1 %s", a.Status)
	}
	h.expectGenerate()
	for _, id := range []string{"r2", "r3"} {
		a := h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: id, Input: input(id)})
		if a.Status != core.StatusQueued {
			t.Fatalf("%s admitted as %s", id, a.Status)
		}
		ev := h.events[len(h.events)-1]
		if p := payload[core.RunAccepted](t, ev); !p.Queued || p.RunID != id {
			t.Fatalf("run.accepted %+v", p)
		}
	}
	s := h.state()
	if s.Active != "r1" || !equalStrings(s.Queue, []string{"r2", "r3"}) {
		t.Fatalf("active %q queue %q", s.Active, s.Queue)
	}
	if s.Run("r2").Status != core.StatusQueued {
		t.Fatal("r2 not queued")
	}
	// The queued run's input is not in context yet.
	if hasPreview(s.Context(), "r2") {
		t.Fatal("queued input entered context")
	}

	var order []string
	for i := 0; i < 3; i++ {
		g := h.answer("answer")
		order = append(order, g.RunID)
	}
	requireKinds(t, order, "r1", "r2", "r3")
	h.expectIdle()
	if n := len(h.ofKind(core.KindRunStarted)); n != 2 {
		t.Fatalf("%d run.started events", n)
	}
	// run.started comes after the previous run's end.
	var ends, starts []int64
	for _, ev := range h.events {
		switch ev.Kind {
		case core.KindRunCompleted:
			ends = append(ends, ev.Seq)
		case core.KindRunStarted:
			starts = append(starts, ev.Seq)
		}
	}
	if starts[0] < ends[0] || starts[1] < ends[1] {
		t.Fatalf("a run started before the previous one ended: starts %v ends %v", starts, ends)
	}
	for _, r := range h.state().Runs() {
		if r.Status != core.StatusCompleted {
			t.Fatalf("run %s %s", r.ID, r.Status)
		}
	}
	if len(h.state().Queue) != 0 || h.state().Active != "" {
		t.Fatal("work left")
	}
}

func TestSpec_SameSubmissionSamePayloadIsANoOpReturningTheRun(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", SubmissionID: "sub-1", Input: input("hello")})
	h.expectGenerate()
	before := len(h.events)
	dup := h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1-retry", SubmissionID: "sub-1", Input: input("hello")})
	if !dup.Duplicate || dup.RunID != a.RunID || dup.Status != core.StatusRunning || len(dup.Proposals) != 0 {
		t.Fatalf("retry admission %+v", dup)
	}
	if len(h.events) != before || h.state().Run("r1-retry") != nil {
		t.Fatal("a retried submission appended events")
	}
	h.answer("done")
	dup = h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1-retry", SubmissionID: "sub-1", Input: input("hello")})
	if !dup.Duplicate || dup.RunID != "r1" || dup.Status != core.StatusCompleted {
		t.Fatalf("retry after completion %+v", dup)
	}
	// The submission id survives replay.
	s, err := core.Replay(h.events)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := core.Admit(s, core.StartRun{AtMs: 1, RunID: "x", SubmissionID: "sub-1", Input: input("hello")}); err != nil || !a.Duplicate || a.RunID != "r1" {
		t.Fatalf("after replay: %+v %v", a, err)
	}
}

func TestSpec_SameSubmissionDifferentPayloadIsRejected(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", SubmissionID: "sub-1", Input: input("hello")})
	h.rejection(core.StartRun{AtMs: h.tick(), RunID: "r2", SubmissionID: "sub-1", Input: input("goodbye")}, core.RejectDuplicateSubmission)
	h.rejection(core.StartRun{AtMs: h.tick(), RunID: "r2", SubmissionID: "sub-1", Input: input("hello", "and more")}, core.RejectDuplicateSubmission)
	other := input("hello")
	other[0].Content.MediaType = "text/markdown"
	h.rejection(core.StartRun{AtMs: h.tick(), RunID: "r2", SubmissionID: "sub-1", Input: other}, core.RejectDuplicateSubmission)
	// A different submission id with the same payload is a new run.
	if a := h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", SubmissionID: "sub-2", Input: input("hello")}); a.Duplicate || a.RunID != "r2" {
		t.Fatalf("%+v", a)
	}
}

func TestSpec_StartRunValidation(t *testing.T) {
	h := newHarness(t, testConfig())
	h.rejection(core.StartRun{AtMs: h.tick(), RunID: "r1"}, core.RejectInvalidInput)
	h.rejection(core.StartRun{AtMs: h.tick(), Input: input("x")}, core.RejectInvalidInput)
	bad := input("x")
	bad[0].Content.MediaType = ""
	h.rejection(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: bad}, core.RejectInvalidInput)
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("x")})
	h.rejection(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("y")}, core.RejectInvalidInput)
}
