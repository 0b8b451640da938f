package core_test

import (
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

func TestSpec_ToolRoundThenAnswerCompletesRunWithLastAssistantMessage(t *testing.T) {
	h := newHarness(t, testConfig("search"))
	start := len(h.events)
	a := h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("find acorn")})
	if a.RunID != "r1" || a.Status != core.StatusRunning || a.Duplicate {
		t.Fatalf("admission %+v", a)
	}

	g1 := h.callTools(call("c1", "search"))
	if g1.RunID != "r1" || g1.Turn != 1 {
		t.Fatalf("generate %s/%d", g1.RunID, g1.Turn)
	}
	w := h.expectTools()
	if w.RunID != "r1" || w.Turn != 1 || len(w.Calls) != 1 || w.Calls[0] != call("c1", "search") {
		t.Fatalf("tool work %+v", w)
	}
	h.mustAdmit(toolResult(h.tick(), w, "c1", core.CallOK, `{"hits":3}`))

	g2 := h.expectGenerate()
	if g2.Turn != 2 {
		t.Fatalf("second generation is turn %d", g2.Turn)
	}
	want := []string{
		"instructions:be brief",
		"message/user:find acorn",
		"message/assistant:let me check",
		"tool_call/c1:",
		`tool_result/c1:{"hits":3}`,
	}
	var got []string
	for _, e := range g2.Entries {
		d := e.Kind
		if e.Role != "" {
			d += "/" + e.Role
		}
		if e.CallID != "" {
			d += "/" + e.CallID
		}
		got = append(got, d+":"+e.Preview)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("turn 2 request entries\n got  %q\n want %q", got, want)
	}

	h.answer("acorn 2.0 notes")
	h.expectIdle()

	requireKinds(t, h.kindsSince(start),
		core.KindRunAccepted, core.KindTurnStarted, core.KindContextEntriesApplied, core.KindTurnPlanned, core.KindTurnGenerationRequested,
		core.KindTurnGenerationCompleted, core.KindContextEntriesApplied, core.KindToolBatchStarted, core.KindToolCallStarted,
		core.KindToolCallCompleted, core.KindContextEntriesApplied, core.KindToolBatchCompleted, core.KindTurnCompleted,
		core.KindTurnStarted, core.KindTurnPlanned, core.KindTurnGenerationRequested,
		core.KindTurnGenerationCompleted, core.KindContextEntriesApplied, core.KindTurnCompleted,
		core.KindRunCompleted,
	)
	outcomes := []string{}
	for _, ev := range h.ofKind(core.KindTurnCompleted) {
		outcomes = append(outcomes, payload[core.TurnCompleted](t, ev).Outcome)
	}
	requireKinds(t, outcomes, core.TurnOutcomeToolCalls, core.TurnOutcomeAnswered)

	done := payload[core.RunCompleted](t, h.events[len(h.events)-1])
	final := assistant("acorn 2.0 notes").Content
	if done.RunID != "r1" || done.Output == nil || *done.Output != final {
		t.Fatalf("run.completed %+v, want output %v", done, final)
	}
	r := h.state().Run("r1")
	if r.Status != core.StatusCompleted || r.Output == nil || *r.Output != final || r.Turns != 2 {
		t.Fatalf("run %+v", r)
	}
	if h.state().Active != "" || h.state().HasWork() {
		t.Fatal("session still has work")
	}
	ctx := contextOf(h.state())
	if ctx[len(ctx)-1] != "message/assistant:acorn 2.0 notes" {
		t.Fatalf("context tail %q", ctx[len(ctx)-1])
	}
}

func TestSpec_EventsCarryRunTurnAndCallJoins(t *testing.T) {
	h := newHarness(t, testConfig("search"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.callTools(call("c1", "search"))
	w := h.expectTools()
	h.mustAdmit(toolResult(h.tick(), w, "c1", core.CallOK, "{}"))
	h.answer("a")
	for _, ev := range h.events {
		var want []string
		switch ev.Kind {
		case core.KindSessionOpened, core.KindSessionConfigChanged, core.KindSessionClosed:
		case core.KindRunAccepted, core.KindRunStarted, core.KindRunCompleted, core.KindRunFailed, core.KindRunCancelled, core.KindRunCancelRequested, core.KindRunSteeringAccepted:
			want = []string{"run:r1"}
		case core.KindToolCallStarted, core.KindToolCallCompleted:
			want = []string{"run:r1", "turn:r1/1", "call:c1"}
		case core.KindContextEntriesApplied:
			continue // joins follow what inserted the entries
		default:
			p := payload[core.TurnStarted](t, ev)
			want = []string{"run:r1", "turn:r1/" + string(rune('0'+p.Turn))}
		}
		if !slices.Equal(ev.Joins, want) {
			t.Errorf("seq %d %s joins %q, want %q", ev.Seq, ev.Kind, ev.Joins, want)
		}
	}
}

func TestSpec_UngrantedToolGetsUnavailableResultWithoutInvocation(t *testing.T) {
	h := newHarness(t, testConfig("search"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.callTools(call("c1", "search"), call("c2", "shell"))

	w := h.expectTools()
	if len(w.Calls) != 1 || w.Calls[0].CallID != "c1" {
		t.Fatalf("invoke tools %+v, want only the granted call c1", w.Calls)
	}
	var completed []core.ToolCallCompleted
	for _, ev := range h.ofKind(core.KindToolCallCompleted) {
		completed = append(completed, payload[core.ToolCallCompleted](t, ev))
	}
	if len(completed) != 1 || completed[0].CallID != "c2" || completed[0].Status != core.CallUnavailable || completed[0].Result != core.ToolUnavailableRef {
		t.Fatalf("completed calls %+v, want c2 unavailable with the constant result", completed)
	}
	// The results join the context when the batch ends, in call order.
	h.mustAdmit(toolResult(h.tick(), w, "c1", core.CallOK, "{}"))
	var result *core.Entry
	var order []string
	for _, e := range h.state().Context() {
		if e.Kind == core.EntryToolResult {
			order = append(order, e.CallID)
		}
		if e.Kind == core.EntryToolResult && e.CallID == "c2" {
			result = &e
		}
	}
	requireKinds(t, order, "c1", "c2")
	if result == nil || result.Content != core.ToolUnavailableRef || result.Source != core.SourceRuntime || result.ToolName != "shell" || result.RunID != "r1" {
		t.Fatalf("c2 result entry %+v", result)
	}
	if result.TokenEstimate.Tokens <= 0 || result.TokenEstimate.Quality != core.EstimateHeuristic {
		t.Fatalf("constant result estimate %+v", result.TokenEstimate)
	}

	if g := h.expectGenerate(); g.Turn != 2 {
		t.Fatalf("turn %d", g.Turn)
	}
}

func TestSpec_AllUngrantedCallsCompleteTheTurnWithoutInvokingTools(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.callTools(call("c1", "shell"))
	// No InvokeTools intent: the next thing is turn 2's generation.
	g := h.expectGenerate()
	if g.Turn != 2 {
		t.Fatalf("turn %d", g.Turn)
	}
	if n := len(h.ofKind(core.KindToolBatchCompleted)); n != 1 {
		t.Fatalf("%d batch completions", n)
	}
	var saw bool
	for _, e := range g.Entries {
		if e.Kind == core.EntryToolResult && e.CallID == "c1" && e.Content == core.ToolUnavailableRef {
			saw = true
		}
	}
	if !saw {
		t.Fatal("turn 2 request lacks the unavailable result")
	}
}

func TestSpec_ParallelToolCallsAllInvokedAndBatchCompletesAfterLast(t *testing.T) {
	h := newHarness(t, testConfig("a", "b", "c"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.callTools(call("c1", "a"), call("c2", "b"), call("c3", "c"))

	w := h.expectTools()
	var ids []string
	for _, c := range w.Calls {
		ids = append(ids, c.CallID)
	}
	requireKinds(t, ids, "c1", "c2", "c3")
	batch := payload[core.ToolBatchStarted](t, h.ofKind(core.KindToolBatchStarted)[0])
	requireKinds(t, batch.CallIDs, "c1", "c2", "c3")

	// Results arrive out of order; the intent keeps listing what is open.
	h.mustAdmit(toolResult(h.tick(), w, "c3", core.CallOK, "3"))
	w2 := h.expectTools()
	if len(w2.Calls) != 2 || w2.Calls[0].CallID != "c1" || w2.Calls[1].CallID != "c2" {
		t.Fatalf("open calls after c3: %+v", w2.Calls)
	}
	if len(h.ofKind(core.KindToolBatchCompleted)) != 0 {
		t.Fatal("batch completed before its last call")
	}
	h.mustAdmit(toolResult(h.tick(), w, "c1", core.CallError, "boom"))
	if len(h.ofKind(core.KindToolBatchCompleted)) != 0 {
		t.Fatal("batch completed before its last call")
	}
	// A second result for a finished call is stale.
	h.rejection(toolResult(h.tick(), w, "c1", core.CallOK, "again"), core.RejectStaleResult)
	h.mustAdmit(toolResult(h.tick(), w, "c2", core.CallOK, "2"))
	if len(h.ofKind(core.KindToolBatchCompleted)) != 1 {
		t.Fatal("batch did not complete after its last call")
	}
	g := h.expectGenerate()
	var results []string
	for _, e := range g.Entries {
		if e.Kind == core.EntryToolResult {
			results = append(results, e.CallID+"="+e.Preview)
		}
	}
	// The results stand in the order of the calls, not of their arrival.
	requireKinds(t, results, "c1=boom", "c2=2", "c3=3")
}

func TestSpec_ToolResultForUnknownCallOrBadStatusIsRejected(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.callTools(call("c1", "a"))
	w := h.expectTools()
	h.rejection(toolResult(h.tick(), w, "nope", core.CallOK, "x"), core.RejectStaleResult)
	h.rejection(toolResult(h.tick(), w, "c1", core.CallCancelled, "x"), core.RejectInvalidInput)
	h.rejection(toolResult(h.tick(), w, "c1", "", "x"), core.RejectInvalidInput)
	bad := toolResult(h.tick(), w, "c1", core.CallOK, "x")
	bad.Result.Content.MediaType = ""
	h.rejection(bad, core.RejectInvalidInput)
	wrongTurn := toolResult(h.tick(), w, "c1", core.CallOK, "x")
	wrongTurn.Turn = 2
	h.rejection(wrongTurn, core.RejectStaleResult)
	wrongRun := toolResult(h.tick(), w, "c1", core.CallOK, "x")
	wrongRun.RunID = "r2"
	h.rejection(wrongRun, core.RejectStaleResult)
}

func TestSpec_FailedGenerationFailsTheRun(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	g := h.expectGenerate()
	start := len(h.events)
	fail := &core.Failure{Kind: "provider_error", Message: "model refused", Ref: &core.ModelFailedRef}
	res := generationWithCalls(h.tick(), g, call("c1", "a"))
	res.Failure = fail
	res.Finish = "error"
	h.mustAdmit(res)
	h.expectIdle()

	requireKinds(t, h.kindsSince(start), core.KindTurnGenerationCompleted, core.KindContextEntriesApplied, core.KindTurnCompleted, core.KindRunFailed)
	gen := payload[core.TurnGenerationCompleted](t, h.events[start])
	if len(gen.ToolCalls) != 0 || gen.Failure == nil || gen.Failure.Kind != "provider_error" {
		t.Fatalf("generation_completed %+v", gen)
	}
	if tc := payload[core.TurnCompleted](t, h.events[start+2]); tc.Outcome != core.TurnOutcomeFailed {
		t.Fatalf("turn outcome %s", tc.Outcome)
	}
	rf := payload[core.RunFailed](t, h.events[start+3])
	if rf.RunID != "r1" || rf.Error.Kind != "provider_error" || rf.Error.Ref == nil || *rf.Error.Ref != core.ModelFailedRef {
		t.Fatalf("run.failed %+v", rf)
	}
	// The failed generation's tool calls never enter context: a tool call
	// without a result would be an invalid request.
	for _, e := range h.state().Context() {
		if e.Kind == core.EntryToolCall {
			t.Fatalf("tool_call entry %s entered context from a failed generation", e.ID)
		}
	}
	r := h.state().Run("r1")
	if r.Status != core.StatusFailed || r.Error == nil || r.Error.Kind != "provider_error" {
		t.Fatalf("run %+v", r)
	}
}

func TestSpec_TurnLimitFailsTheRun(t *testing.T) {
	cfg := testConfig("a")
	cfg.MaxTurns = 2
	h := newHarness(t, cfg)
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	for turn := 1; turn <= 2; turn++ {
		g := h.callTools(call("c"+string(rune('0'+turn)), "a"))
		if g.Turn != turn {
			t.Fatalf("turn %d", g.Turn)
		}
		w := h.expectTools()
		h.mustAdmit(toolResult(h.tick(), w, w.Calls[0].CallID, core.CallOK, "{}"))
	}
	h.expectIdle()
	last := h.events[len(h.events)-1]
	if last.Kind != core.KindRunFailed {
		t.Fatalf("last event %s", last.Kind)
	}
	if rf := payload[core.RunFailed](t, last); rf.Error.Kind != "turn_limit" || rf.Error.Message == "" {
		t.Fatalf("run.failed %+v", rf)
	}
	if n := len(h.ofKind(core.KindTurnStarted)); n != 2 {
		t.Fatalf("%d turns started, limit is 2", n)
	}
	if h.state().Run("r1").Status != core.StatusFailed {
		t.Fatal("run not failed")
	}
}

func TestSpec_DefaultTurnLimitApplies(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	if h.state().MaxTurns() != core.DefaultMaxTurns {
		t.Fatalf("MaxTurns %d", h.state().MaxTurns())
	}
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	for turn := 1; turn <= core.DefaultMaxTurns; turn++ {
		h.callTools(call("c"+itoa(turn), "a"))
		w := h.expectTools()
		h.mustAdmit(toolResult(h.tick(), w, w.Calls[0].CallID, core.CallOK, "{}"))
	}
	h.expectIdle()
	if r := h.state().Run("r1"); r.Status != core.StatusFailed || r.Error.Kind != "turn_limit" || r.Turns != core.DefaultMaxTurns {
		t.Fatalf("run %+v", r)
	}
}

func TestSpec_GenerationResultValidation(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	g := h.expectGenerate()

	noID := generationWithCalls(h.tick(), g, core.ToolCall{Name: "a", Arguments: call("x", "a").Arguments})
	h.rejection(noID, core.RejectInvalidInput)
	noName := generationWithCalls(h.tick(), g, core.ToolCall{CallID: "x", Arguments: call("x", "a").Arguments})
	h.rejection(noName, core.RejectInvalidInput)
	h.rejection(generationWithCalls(h.tick(), g, call("x", "a"), call("x", "a")), core.RejectInvalidInput)
	badEntry := generationWithCalls(h.tick(), g)
	badEntry.Entries[0].Content.MediaType = ""
	h.rejection(badEntry, core.RejectInvalidInput)
	wrongTurn := generationWithCalls(h.tick(), g)
	wrongTurn.Turn = 2
	h.rejection(wrongTurn, core.RejectStaleResult)

	// The turn is still open and accepts a good result.
	h.mustAdmit(generationWithCalls(h.tick(), g))
	// A second result for the same generation is stale.
	h.rejection(generationWithCalls(h.tick(), g), core.RejectStaleResult)
}

// A command carrying a ref without a digest must be rejected, not crash the
// core while encoding its event.
func TestSpec_RefsWithoutDigestAreRejectedNotPanics(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	g := h.expectGenerate()

	zeroArgs := call("c1", "a")
	zeroArgs.Arguments.Digest = [32]byte{}
	res := generationWithCalls(h.tick(), g, zeroArgs)
	res.Entries = res.Entries[:1]
	h.rejection(res, core.RejectInvalidInput)

	noDigestFailureRef := generationWithCalls(h.tick(), g)
	noDigestFailureRef.Failure = &core.Failure{Kind: "x", Message: "y", Ref: &content.ContentRef{MediaType: content.MediaText}}
	h.rejection(noDigestFailureRef, core.RejectInvalidInput)

	badProvenance := generationWithCalls(h.tick(), g)
	badProvenance.Entries[0].ProvenanceRef = &content.ContentRef{MediaType: content.MediaText}
	h.rejection(badProvenance, core.RejectInvalidInput)

	h.mustAdmit(generationWithCalls(h.tick(), g, call("c1", "a")))
	w := h.expectTools()
	tr := toolResult(h.tick(), w, "c1", core.CallOK, "x")
	tr.Result.ProvenanceRef = &content.ContentRef{MediaType: content.MediaText}
	h.rejection(tr, core.RejectInvalidInput)
}

// Every tool_call entry a generation writes must belong to one of its
// admitted calls; otherwise it would sit in context with no result.
func TestSpec_ToolCallEntryWithoutAdmittedCallIsRejected(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	g := h.expectGenerate()
	res := generationWithCalls(h.tick(), g, call("c1", "a"))
	res.Entries = append(res.Entries, toolCallEntry(call("c9", "a")))
	h.rejection(res, core.RejectInvalidInput)
	res = generationWithCalls(h.tick(), g)
	res.Entries = append(res.Entries, toolCallEntry(call("c1", "a")))
	h.rejection(res, core.RejectInvalidInput)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
