package core_test

import (
	"testing"

	"github.com/cairn-agents/cairn/core"
)

// lifecycleScenario: r1 runs with a tool round while r2 and r3 queue; r3 is
// cancelled while queued; r2 starts after r1, fails; r4 is cancelled while
// active; the config changes; the session closes.
func lifecycleScenario(t *testing.T) *harness {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("one")})
	h.callTools(call("c1", "a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("two")})
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r3", Input: input("three")})
	w := h.expectTools()
	h.mustAdmit(core.CancelRun{AtMs: h.tick(), RunID: "r3"})
	h.mustAdmit(toolResult(h.tick(), w, "c1", core.CallOK, "x"))
	h.answer("a1")
	g := h.expectGenerate()
	h.mustAdmit(core.GenerationResult{AtMs: h.tick(), RunID: g.RunID, Turn: g.Turn, Finish: "error", Failure: &core.Failure{Kind: "provider_error", Message: "500"}})
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r4", Input: input("four")})
	h.expectGenerate()
	h.mustAdmit(core.CancelRun{AtMs: h.tick(), RunID: "r4"})
	// A pending compaction is unfinished work too: a restarted host must
	// resume it.
	h.mustAdmit(core.RequestCompaction{AtMs: h.tick(), CompactionID: "k1"})
	w1 := h.next().Compact
	h.mustAdmit(core.CompactionResult{AtMs: h.tick(), CompactionID: w1.CompactionID, ContextRevision: w1.ContextRevision, Entries: []core.EntryInput{entryText(core.EntrySummary, "", "s")}})
	cfg := testConfig("a")
	cfg.Model.Model = "gpt-next"
	h.mustAdmit(core.ChangeConfig{AtMs: h.tick(), Config: cfg})
	h.mustAdmit(core.CloseSession{AtMs: h.tick()})
	return h
}

func TestLifecycle_ProjectionAgreesWithTheReducerAfterEveryEvent(t *testing.T) {
	h := lifecycleScenario(t)
	var l core.Lifecycle
	s := core.NewState()
	for _, ev := range h.events {
		l = core.ProjectLifecycle(l, ev)
		if err := s.Apply(ev); err != nil {
			t.Fatal(err)
		}
		at := func(what string, got, want any) {
			t.Helper()
			if got != want {
				t.Fatalf("after seq %d (%s): %s = %v, want %v", ev.Seq, ev.Kind, what, got, want)
			}
		}
		at("head", l.Head, s.Head)
		at("updatedAtMs", l.UpdatedAtMs, ev.ObservedAtMs)
		at("createdAtMs", l.CreatedAtMs, h.events[0].ObservedAtMs)
		at("sessionId", l.SessionID, s.SessionID)
		at("model", l.Model, s.Config.Model)
		at("activeRunId", l.ActiveRunID, s.Active)
		at("queuedRuns", l.QueuedRuns, len(s.Queue))
		at("unfinished", l.Unfinished(), s.HasWork() || s.Compaction != nil)
		at("compactionPending", l.CompactionPending, s.Compaction != nil)
		status := core.SessionStatusOpen
		if s.Closed {
			status = core.SessionStatusClosed
		}
		at("status", l.Status, status)
		if runs := s.Runs(); len(runs) > 0 {
			last := runs[len(runs)-1]
			at("lastRunId", l.LastRunID, last.ID)
			at("lastRunStatus", l.LastRunStatus, last.Status)
		} else {
			at("lastRunId", l.LastRunID, "")
		}
	}
	if l.Status != core.SessionStatusClosed || l.Unfinished() || l.LastRunID != "r4" || l.LastRunStatus != core.StatusCancelled || l.Model.Model != "gpt-next" {
		t.Fatalf("final projection %+v", l)
	}
}

func TestLifecycle_QueuedLastRunBecomesRunningWhenItStarts(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("one")})
	h.expectGenerate()
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("two")})
	var l core.Lifecycle
	for _, ev := range h.events {
		l = core.ProjectLifecycle(l, ev)
	}
	if l.ActiveRunID != "r1" || l.QueuedRuns != 1 || l.LastRunID != "r2" || l.LastRunStatus != core.StatusQueued || !l.Unfinished() {
		t.Fatalf("with r2 queued: %+v", l)
	}
	mark := len(h.events)
	h.answer("a")
	h.expectGenerate() // r2 has started
	for _, ev := range h.events[mark:] {
		l = core.ProjectLifecycle(l, ev)
	}
	if l.ActiveRunID != "r2" || l.QueuedRuns != 0 || l.LastRunStatus != core.StatusRunning {
		t.Fatalf("after r2 started: %+v", l)
	}
	mark = len(h.events)
	h.answer("b")
	h.expectIdle()
	for _, ev := range h.events[mark:] {
		l = core.ProjectLifecycle(l, ev)
	}
	if l.Unfinished() || l.LastRunStatus != core.StatusCompleted || l.ActiveRunID != "" {
		t.Fatalf("after r2 completed: %+v", l)
	}
}

func TestLifecycle_UnknownEventsOnlyMoveHeadAndTime(t *testing.T) {
	l := core.Lifecycle{SessionID: "s", Status: core.SessionStatusOpen, Head: 3, ActiveRunID: "r1", QueuedRuns: 2}
	got := core.ProjectLifecycle(l, core.Event{Seq: 4, ObservedAtMs: 99, Kind: "future.kind", Version: 1, Payload: []byte(`{}`)})
	want := l
	want.Head, want.UpdatedAtMs = 4, 99
	if got != want {
		t.Fatalf("got %+v want %+v", got, want)
	}
}
