package core_test

import (
	"math"
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

func standalone(threshold int64) core.SessionConfig {
	cfg := testConfig("a")
	cfg.Compaction = &core.Compaction{Mode: core.CompactionProviderStandalone, ThresholdTokens: threshold, TargetTokens: 100}
	return cfg
}

// conversation plays two runs (one with a tool round) and adds a skill, a
// catalog with a superseded version, so every kind of entry is present.
func conversation(h *harness) {
	h.t.Helper()
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntrySkillActivation, "skill.notes", "skill body")}})
	runtimeAppend(h, catalog("catalog.skills", "cat v1"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q1")})
	h.callTools(call("c1", "a"))
	w := h.expectTools()
	h.mustAdmit(toolResult(h.tick(), w, "c1", core.CallOK, "tool out"))
	h.answer("a1")
	runtimeAppend(h, catalog("catalog.skills", "cat v2"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("q2")})
	h.answer("a2")
	h.expectIdle()
}

func summary(text string) core.EntryInput {
	return entryText(core.EntrySummary, "", text)
}

func TestSpec_CompactableKeepsInstructionsCurrentCatalogsSkillsAndToolPairs(t *testing.T) {
	h := newHarness(t, standalone(0))
	conversation(h)
	var got []string
	for _, e := range h.state().Compactable() {
		got = append(got, kindPreview(e))
	}
	want := []string{"catalog:cat v1", "message/user:q1", "message/assistant:let me check", "tool_call:c1", "tool_result:tool out",
		"message/assistant:a1", "message/user:q2", "message/assistant:a2"}
	if !slices.Equal(got, want) {
		t.Fatalf("compactable\n got  %q\n want %q", got, want)
	}
}

func kindPreview(e core.Entry) string {
	d := e.Kind
	if e.Role != "" {
		d += "/" + e.Role
	}
	if e.Kind == core.EntryToolCall {
		return d[:len(core.EntryToolCall)] + ":" + e.CallID
	}
	return d + ":" + e.Preview
}

func TestSpec_ManualCompactionReplacesConversationAndKeepsWhatMustSurvive(t *testing.T) {
	h := newHarness(t, standalone(0))
	conversation(h)
	rev := h.state().Revision
	h.mustAdmit(core.RequestCompaction{AtMs: h.tick(), CompactionID: "k1"})
	req := payload[core.CompactionRequested](t, h.ofKind(core.KindCompactionRequested)[0])
	if req.Trigger != core.TriggerManual || req.ContextRevision != rev || len(req.EntryIDs) != 8 || req.EstimatedTokens <= 0 {
		t.Fatalf("requested %+v", req)
	}
	in := h.next()
	if in.Kind != core.IntentCompact || in.Compact.CompactionID != "k1" || in.Compact.ContextRevision != rev {
		t.Fatalf("intent %s %+v", in.Kind, in.Compact)
	}
	for _, e := range in.Compact.Entries {
		if e.Kind == core.EntryCatalog {
			t.Fatal("a superseded catalog was sent to the compactor")
		}
	}
	if len(in.Compact.Entries) != 7 {
		t.Fatalf("%d entries sent to the compactor, want 7", len(in.Compact.Entries))
	}
	h.mustAdmit(core.CompactionResult{AtMs: h.tick(), CompactionID: "k1", ContextRevision: rev, Entries: []core.EntryInput{summary("the story so far")}})
	h.expectIdle()
	want := []string{"instructions:be brief", "skill_activation:skill body", "summary:the story so far", "catalog:cat v2"}
	if got := contextOf(h.state()); !slices.Equal(got, want) {
		t.Fatalf("context after compaction %q, want %q", got, want)
	}
	if h.state().Revision != rev+1 || h.state().Compaction != nil {
		t.Fatalf("revision %d (want %d), pending %+v", h.state().Revision, rev+1, h.state().Compaction)
	}
	// History is untouched: the original entries are still in their events,
	// and the first run's output is still its output.
	n := 0
	for _, ev := range h.ofKind(core.KindContextEntriesApplied) {
		n += len(payload[core.ContextEntriesApplied](t, ev).Entries)
	}
	if n < 10 || h.state().Run("r1").Output == nil {
		t.Fatalf("history lost entries (%d applied) or the run output", n)
	}
	h.snapshot() // replay equals the live state
}

func TestSpec_FailedCompactionKeepsOriginalEntries(t *testing.T) {
	h := newHarness(t, standalone(0))
	conversation(h)
	before := contextOf(h.state())
	rev := h.state().Revision
	h.mustAdmit(core.RequestCompaction{AtMs: h.tick(), CompactionID: "k1"})
	h.next()
	h.mustAdmit(core.CompactionResult{AtMs: h.tick(), CompactionID: "k1", ContextRevision: rev, Failure: &core.Failure{Kind: "compaction_failed", Message: "no item"}})
	if got := contextOf(h.state()); !slices.Equal(got, before) || h.state().Compaction != nil || h.state().Revision != rev {
		t.Fatalf("after a failed compaction: context %q, pending %+v, revision %d", got, h.state().Compaction, h.state().Revision)
	}
	// An empty replacement is a failure too, never an emptied context.
	h.mustAdmit(core.RequestCompaction{AtMs: h.tick(), CompactionID: "k2"})
	h.next()
	h.mustAdmit(core.CompactionResult{AtMs: h.tick(), CompactionID: "k2", ContextRevision: rev})
	if got := contextOf(h.state()); !slices.Equal(got, before) || len(h.ofKind(core.KindCompactionFailed)) != 2 {
		t.Fatalf("an empty replacement changed the context: %q", got)
	}
}

func TestSpec_StaleCompactionResultIsRejected(t *testing.T) {
	h := newHarness(t, standalone(0))
	conversation(h)
	rev := h.state().Revision
	h.mustAdmit(core.RequestCompaction{AtMs: h.tick(), CompactionID: "k1"})
	h.next()
	for _, c := range []core.CompactionResult{
		{CompactionID: "k0", ContextRevision: rev, Entries: []core.EntryInput{summary("s")}},
		{CompactionID: "k1", ContextRevision: rev - 1, Entries: []core.EntryInput{summary("s")}},
	} {
		c.AtMs = h.tick()
		h.rejection(c, core.RejectStaleResult)
	}
	h.mustAdmit(core.CompactionResult{AtMs: h.tick(), CompactionID: "k1", ContextRevision: rev, Entries: []core.EntryInput{summary("s")}})
	// A late duplicate of a finished compaction is stale too.
	h.rejection(core.CompactionResult{AtMs: h.tick(), CompactionID: "k1", ContextRevision: rev, Entries: []core.EntryInput{summary("s")}}, core.RejectStaleResult)
}

func TestSpec_PendingCompactionGatesRunsAndContextEdits(t *testing.T) {
	h := newHarness(t, standalone(0))
	conversation(h)
	h.mustAdmit(core.RequestCompaction{AtMs: h.tick(), CompactionID: "k1"})
	h.next()
	cfg := standalone(5)
	for _, cmd := range []core.Command{
		core.StartRun{AtMs: h.tick(), RunID: "r9", Input: input("q")},
		core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m")}},
		core.RemoveContext{AtMs: h.tick(), Keys: []string{"skill.notes"}},
		core.ChangeConfig{AtMs: h.tick(), Config: cfg},
		core.CloseSession{AtMs: h.tick()},
		core.RequestCompaction{AtMs: h.tick(), CompactionID: "k2"},
	} {
		h.rejection(cmd, core.RejectCompactionPending)
	}
}

func TestSpec_ManualCompactionNeedsAnIdleSessionAndSomethingToCompact(t *testing.T) {
	h := newHarness(t, standalone(0))
	h.rejection(core.RequestCompaction{AtMs: h.tick(), CompactionID: "k1"}, core.RejectInvalidInput) // only instructions
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.expectGenerate()
	h.rejection(core.RequestCompaction{AtMs: h.tick(), CompactionID: "k1"}, core.RejectActiveWork)
}

func TestSpec_ThresholdTriggersCompactionOnlyWhenIdleAfterARun(t *testing.T) {
	h := newHarness(t, standalone(4)) // four one-token messages reach it
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q1")})
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("q2")}) // queued
	h.answer("a1")
	// r2 is queued: it starts; no compaction in front of queued work.
	if in := h.next(); in.Kind != core.IntentGenerate || in.Generate.RunID != "r2" {
		t.Fatalf("intent %s, want r2's generation", in.Kind)
	}
	h.answer("a2")
	in := h.next()
	if in.Kind != core.IntentCompact {
		tokens, ok := h.state().CompactableTokens()
		t.Fatalf("intent %s with %d compactable tokens (%v), want compaction", in.Kind, tokens, ok)
	}
	req := payload[core.CompactionRequested](t, h.ofKind(core.KindCompactionRequested)[0])
	if req.Trigger != core.TriggerThreshold || req.EstimatedTokens < 4 {
		t.Fatalf("requested %+v", req)
	}
	h.mustAdmit(core.CompactionResult{AtMs: h.tick(), CompactionID: in.Compact.CompactionID, ContextRevision: in.Compact.ContextRevision,
		Entries: []core.EntryInput{summary("a summary long enough to be over the threshold of ten tokens by itself, surely")}})
	// The summary alone is over the threshold, but no run ended since: no loop.
	h.expectIdle()
}

func TestSpec_ThresholdNeedsAUsableEstimate(t *testing.T) {
	for name, est := range map[string]core.TokenEstimate{
		"missing":  {},
		"overflow": {Tokens: math.MaxInt64, Quality: core.EstimateHeuristic},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, standalone(10))
			h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q1")})
			g := h.expectGenerate()
			a := assistant("a long answer that alone is well over the threshold of ten tokens, yes")
			a.TokenEstimate = est
			b := assistant("and another one")
			b.TokenEstimate = core.TokenEstimate{Tokens: 20, Quality: core.EstimateHeuristic} // over the threshold on its own
			h.mustAdmit(core.GenerationResult{AtMs: h.tick(), RunID: g.RunID, Turn: g.Turn, Entries: []core.EntryInput{a, b}, Finish: "stop"})
			if _, ok := h.state().CompactableTokens(); ok {
				t.Fatal("the estimate sum is usable")
			}
			h.expectIdle()
		})
	}
}

func TestSpec_ProviderTriggeredOnlyForResponses(t *testing.T) {
	for _, kind := range []string{core.APIChatCompletions, core.APIAnthropicMessages} {
		cfg := testConfig()
		cfg.Model.APIKind = kind
		cfg.Compaction = &core.Compaction{Mode: core.CompactionProviderTriggered}
		h := newHarness(t, testConfig())
		h.rejection(core.ChangeConfig{AtMs: h.tick(), Config: cfg}, core.RejectInvalidConfiguration)
		if err := core.ValidateConfig(cfg); err == nil {
			t.Fatalf("%s accepted provider_triggered", kind)
		}
	}
	cfg := testConfig()
	cfg.Model.APIKind = core.APIOpenAIResponses
	cfg.Compaction = &core.Compaction{Mode: core.CompactionProviderTriggered, ThresholdTokens: 1000}
	if err := core.ValidateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []core.Compaction{{Mode: "sometimes"}, {Mode: core.CompactionProviderStandalone, ThresholdTokens: -1}, {Mode: core.CompactionProviderStandalone, TargetTokens: -5}} {
		cfg.Compaction = &bad
		if err := core.ValidateConfig(cfg); err == nil {
			t.Fatalf("accepted %+v", bad)
		}
	}
}

func TestSpec_ProviderCompactionItemPrunesEarlierConversation(t *testing.T) {
	cfg := testConfig("a")
	cfg.Model.APIKind = core.APIOpenAIResponses
	cfg.Compaction = &core.Compaction{Mode: core.CompactionProviderTriggered, ThresholdTokens: 1000}
	h := newHarness(t, cfg)
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntrySkillActivation, "skill.notes", "skill body")}})
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q1")})
	h.callTools(call("c1", "a"))
	w := h.expectTools()
	h.mustAdmit(toolResult(h.tick(), w, "c1", core.CallOK, "tool out"))
	g := h.expectGenerate()
	item := entryText(core.EntryCompaction, "", "opaque compaction")
	h.mustAdmit(core.GenerationResult{AtMs: h.tick(), RunID: g.RunID, Turn: g.Turn, Entries: []core.EntryInput{item, assistant("done")}, Finish: "stop"})
	h.expectIdle()
	want := []string{"instructions:be brief", "skill_activation:skill body", "compaction:opaque compaction", "message/assistant:done"}
	if got := contextOf(h.state()); !slices.Equal(got, want) {
		t.Fatalf("context %q, want %q", got, want)
	}
	ev := h.ofKind(core.KindContextCompacted)
	if len(ev) != 1 || payload[core.ContextCompacted](t, ev[0]).Trigger != core.TriggerProvider {
		t.Fatalf("compacted events %+v", ev)
	}
	h.snapshot()
}

func TestSpec_CheckpointKeepsPendingCompaction(t *testing.T) {
	h := newHarness(t, standalone(0))
	conversation(h)
	h.mustAdmit(core.RequestCompaction{AtMs: h.tick(), CompactionID: "k1"})
	h.next()
	cp, err := core.EncodeCheckpoint(h.state())
	if err != nil {
		t.Fatal(err)
	}
	s, err := core.DecodeCheckpoint(cp)
	if err != nil {
		t.Fatal(err)
	}
	if s.Compaction == nil || s.Compaction.ID != "k1" || s.PendingCompactWork() == nil {
		t.Fatalf("checkpoint lost the pending compaction: %+v", s.Compaction)
	}
}
