package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// waitCompaction polls session/read until no compaction is pending.
func (e *env) waitCompaction(t *testing.T, sid string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for e.read(t, sid).Compaction != nil {
		if time.Now().After(deadline) {
			t.Fatal("compaction still pending")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func kindsOf(cx api.ContextReadResult) string {
	var k []string
	for _, en := range cx.Entries {
		k = append(k, en.Kind)
	}
	return strings.Join(k, ",")
}

func TestCompact_ManualCompactionReplacesConversationAndKeepsHistory(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{Model: testModel(), Instructions: "be brief"})
	r1 := e.start(t, sid, "first question")
	e.waitStatus(t, sid, r1.RunID, core.StatusCompleted)
	r2 := e.start(t, sid, "second question")
	e.waitStatus(t, sid, r2.RunID, core.StatusCompleted)

	res, err := e.c.CompactContext(bg, sid)
	if err != nil {
		t.Fatal(err)
	}
	e.waitCompaction(t, sid)
	cx := e.context(t, sid)
	if got := kindsOf(cx); got != "instructions,summary" {
		t.Fatalf("context after compaction: %s", got)
	}
	if len(e.model.compactions) != 1 || len(e.model.compactions[0].Entries) != 4 {
		t.Fatalf("compactor got %+v", e.model.compactions)
	}
	for _, en := range e.model.compactions[0].Entries {
		if en.Kind == core.EntryInstructions {
			t.Fatal("instructions were sent to the compactor")
		}
	}
	// History is untouched: the run still reads its full output, and the
	// events still hold the conversation.
	run, err := e.c.ReadRun(bg, sid, r1.RunID)
	if err != nil || run.Output == nil || run.Output.VisibleText() != "echo: first question" {
		t.Fatalf("run output after compaction: %+v %v", run.Output, err)
	}
	var compacted bool
	for _, ev := range e.events(t, sid) {
		compacted = compacted || ev.Kind == core.KindCompactionCompleted && strings.Contains(string(ev.Payload), res.CompactionID)
	}
	if !compacted {
		t.Fatal("no compaction.completed event for the request")
	}
	// The next run sees the summary, not the conversation.
	r3 := e.start(t, sid, "third")
	e.waitStatus(t, sid, r3.RunID, core.StatusCompleted)
	req := e.model.request(2)
	if len(req.Entries) != 3 || req.Entries[1].Kind != core.EntrySummary {
		t.Fatalf("request after compaction has %d entries: %+v", len(req.Entries), req.Entries)
	}
}

func TestCompact_FailureKeepsEveryEntry(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{Model: testModel()})
	r1 := e.start(t, sid, "q")
	e.waitStatus(t, sid, r1.RunID, core.StatusCompleted)
	before := e.context(t, sid)
	e.model.mu.Lock()
	e.model.compactFail = true
	e.model.mu.Unlock()
	if _, err := e.c.CompactContext(bg, sid); err != nil {
		t.Fatal(err)
	}
	e.waitCompaction(t, sid)
	after := e.context(t, sid)
	if kindsOf(after) != kindsOf(before) || after.Revision != before.Revision {
		t.Fatalf("a failed compaction changed the context: %s (rev %d) -> %s (rev %d)", kindsOf(before), before.Revision, kindsOf(after), after.Revision)
	}
}

// While compaction is pending, a new run is held, not refused; it starts
// once the compaction has committed, on the compacted context.
func TestCompact_RunSubmittedWhilePendingIsHeldNotRefused(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{Model: testModel()})
	r1 := e.start(t, sid, "q1")
	e.waitStatus(t, sid, r1.RunID, core.StatusCompleted)
	gate := make(chan struct{})
	e.model.mu.Lock()
	e.model.compactGate = gate
	e.model.mu.Unlock()
	if _, err := e.c.CompactContext(bg, sid); err != nil {
		t.Fatal(err)
	}
	if e.read(t, sid).Compaction == nil {
		t.Fatal("session/read shows no pending compaction")
	}
	started := make(chan api.RunStartResult, 1)
	go func() {
		r, err := e.c.StartRun(bg, api.RunStartParams{SessionID: sid, Input: textInput("q2")})
		if err != nil {
			t.Error(err)
		}
		started <- r
	}()
	select {
	case <-started:
		t.Fatal("the run was admitted while compaction was pending")
	case <-time.After(100 * time.Millisecond):
	}
	close(gate)
	r2 := <-started
	e.waitStatus(t, sid, r2.RunID, core.StatusCompleted)
	if req := e.model.request(1); req.Entries[0].Kind != core.EntrySummary {
		t.Fatalf("the held run did not run on the compacted context: %+v", req.Entries)
	}
}

func TestCompact_ThresholdCompactsAutomaticallyAfterARun(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{Model: testModel(),
		Compaction: &core.Compaction{Mode: core.CompactionProviderStandalone, ThresholdTokens: 30, TargetTokens: 200}})
	for _, q := range []string{"a first question of some length", "a second question, a little longer", "third"} {
		r := e.start(t, sid, q)
		e.waitStatus(t, sid, r.RunID, core.StatusCompleted)
		e.waitCompaction(t, sid)
	}
	e.model.mu.Lock()
	n := len(e.model.compactions)
	e.model.mu.Unlock()
	if n == 0 {
		t.Fatal("the threshold never triggered compaction")
	}
	var auto bool
	for _, ev := range e.events(t, sid) {
		auto = auto || ev.Kind == core.KindCompactionRequested && strings.Contains(string(ev.Payload), `"trigger":"threshold"`)
	}
	if !auto {
		t.Fatal("no threshold-triggered compaction in the events")
	}
	if e.model.compactions[0].TargetTokens != 200 {
		t.Fatalf("target tokens %d", e.model.compactions[0].TargetTokens)
	}
}

func TestCompact_BadPolicyIsRejectedAtCreation(t *testing.T) {
	e := newEnv(t)
	_, err := e.c.CreateSession(bg, api.CreateSessionParams{Model: testModel(), Compaction: &core.Compaction{Mode: core.CompactionProviderTriggered}})
	wantKind(t, err, core.RejectInvalidConfiguration)
	_, err = e.c.CreateSession(bg, api.CreateSessionParams{Model: testModel(), Compaction: &core.Compaction{Mode: "often"}})
	wantKind(t, err, core.RejectInvalidConfiguration)
}
