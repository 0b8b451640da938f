package core_test

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// propModel drives a harness with random commands, valid and invalid, and
// checks the core's invariants after every step.
type propModel struct {
	h        *harness
	cmds     []core.Command // every command tried, in order, for the determinism check
	runs     int
	calls    int
	steers   int
	shadow   *core.State // the log applied one event at a time
	checked  int
	last     *core.State             // replayed after the previous step: an independent copy of the live state
	requests map[string][]core.Entry // "run/turn" -> entries handed to the adapter
	// memo and chunks are what a host keeps between chunked checkpoints of
	// the live state: the last one's memo, and every chunk stored so far.
	memo        *core.CheckpointMemo
	chunks      map[content.Digest][]byte
	chunkChecks int
}

func mustEncode(t tb, s *core.State) []byte {
	b, err := core.EncodeCheckpoint(s)
	if err != nil {
		t.Fatalf("encode checkpoint: %v", err)
	}
	return b
}

func newPropModel(t tb) *propModel {
	return &propModel{h: newHarness(t, propConfig()), shadow: core.NewState(), requests: map[string][]core.Entry{}, chunks: map[content.Digest][]byte{}}
}

var texts = []string{"x", "y", "z"}

func (m *propModel) intent() core.Intent {
	in := m.h.d.Next(m.h.now)
	if in.Kind == core.IntentAppend {
		m.h.t.Fatalf("proposals pending between steps")
	}
	return in
}

// drawCommand draws the next command. rapid draws small integers more often
// than large ones, so the common, progressing choices get the small numbers
// and rare variants (stale, invalid) the large ones.
func (m *propModel) drawCommand(t *rapid.T) core.Command {
	h, at := m.h, m.h.now
	s := h.state()
	in := m.intent()
	if in.Kind == core.IntentCompact && rapid.IntRange(0, 4).Draw(t, "answerCompaction") > 0 {
		w := in.Compact
		res := core.CompactionResult{AtMs: at, CompactionID: w.CompactionID, ContextRevision: w.ContextRevision}
		switch rapid.IntRange(0, 5).Draw(t, "compactionVariant") {
		case 3, 4:
			res.Failure = &core.Failure{Kind: "compaction_failed", Message: "x"}
		case 5: // stale
			res.ContextRevision--
		default:
			res.Entries = []core.EntryInput{entryText(core.EntrySummary, "", rapid.SampledFrom(texts).Draw(t, "summary"))}
		}
		return res
	}
	if in.Kind == core.IntentTranscribe && rapid.IntRange(0, 4).Draw(t, "answerTranscription") > 0 {
		res := transcribed(at, in.Transcribe, rapid.SampledFrom(texts).Draw(t, "transcript"))
		switch rapid.IntRange(0, 5).Draw(t, "transcriptionVariant") {
		case 3:
			res.Transcripts, res.Failure = nil, &core.Failure{Kind: core.FailureTranscription, Message: "x"}
		case 4: // stale
			res.RunID = "r0"
		case 5: // invalid: a transcript missing
			res.Transcripts = res.Transcripts[1:]
		}
		return res
	}
	if in.Kind == core.IntentIdle && len(s.Compactable()) > 0 && rapid.IntRange(0, 9).Draw(t, "compactNow") == 9 {
		return core.RequestCompaction{AtMs: at, CompactionID: "k" + itoa(int(at))}
	}
	switch pick := rapid.IntRange(0, 99).Draw(t, "action"); {
	case pick < 30:
		if in.Kind != core.IntentGenerate || rapid.IntRange(0, 9).Draw(t, "staleGeneration") == 9 {
			return core.GenerationResult{AtMs: at, RunID: "r" + itoa(rapid.IntRange(0, m.runs+1).Draw(t, "staleRun")), Turn: rapid.IntRange(0, 3).Draw(t, "staleTurn"), Entries: []core.EntryInput{assistant("stale")}}
		}
		g := in.Generate
		var calls []core.ToolCall
		for i, n := 0, rapid.IntRange(0, 3).Draw(t, "calls"); i < n; i++ {
			m.calls++
			calls = append(calls, call("c"+itoa(m.calls), rapid.SampledFrom([]string{"a", "b", "z"}).Draw(t, "tool")))
		}
		res := generationWithCalls(at, g, calls...)
		res.Entries[0] = assistant(rapid.SampledFrom(texts).Draw(t, "answer"))
		if rapid.Bool().Draw(t, "cacheFacts") {
			res.Cache = goldenCacheFacts(g)
		}
		switch rapid.IntRange(0, 9).Draw(t, "generationVariant") {
		case 7:
			res.Failure, res.Finish = &core.Failure{Kind: "provider_error", Message: "x"}, "error"
		case 8: // invalid: a tool_call entry for a call it does not list
			res.Entries = append(res.Entries, toolCallEntry(call("orphan", "a")))
		case 9: // invalid: the same call id twice
			if len(calls) > 0 {
				res.ToolCalls = append(res.ToolCalls, calls[0])
			}
		}
		return res
	case pick < 50:
		if rapid.IntRange(0, 4).Draw(t, "decision") == 4 { // a decision on any call id
			d := core.DecideApproval{AtMs: at, CallID: "c" + itoa(rapid.IntRange(1, m.calls+1).Draw(t, "decidedCall")), Approve: rapid.Bool().Draw(t, "approve"), Reason: "because"}
			if !d.Approve && rapid.IntRange(0, 5).Draw(t, "denialWithoutResult") > 0 {
				d.Result = entryText(core.EntryToolResult, "", "denied: because")
			}
			return d
		}
		if rapid.IntRange(0, 9).Draw(t, "expire") == 9 { // a host's deadline report, due or not
			return core.ExpireToolCall{AtMs: at, CallID: "c" + itoa(rapid.IntRange(1, m.calls+1).Draw(t, "expiredCall"))}
		}
		if rapid.IntRange(0, 3).Draw(t, "clientResult") == 3 { // a client tool's result, for any call id
			return core.SubmitToolOutput{AtMs: at, CallID: "c" + itoa(rapid.IntRange(1, m.calls+1).Draw(t, "clientCall")),
				IsError: rapid.Bool().Draw(t, "clientError"), Result: entryText(core.EntryToolResult, "", rapid.SampledFrom(texts).Draw(t, "clientOutput"))}
		}
		if in.Kind != core.IntentInvokeTools || rapid.IntRange(0, 9).Draw(t, "staleTool") == 9 {
			return core.ToolResult{AtMs: at, RunID: "r" + itoa(rapid.IntRange(0, m.runs).Draw(t, "staleRun")), Turn: 1, CallID: "c" + itoa(rapid.IntRange(0, m.calls+1).Draw(t, "staleCall")), Status: core.CallOK, Result: entryText(core.EntryToolResult, "", "stale")}
		}
		w := in.Tools
		c := rapid.SampledFrom(w.Calls).Draw(t, "call")
		status := rapid.SampledFrom([]string{core.CallOK, core.CallOK, core.CallError, core.CallFailed, core.CallUnavailable, "bogus"}).Draw(t, "status")
		return toolResult(at, w, c.CallID, status, rapid.SampledFrom(texts).Draw(t, "output"))
	case pick < 62: // start a run, sometimes retrying a submission or reusing a run id
		id := "r" + itoa(m.runs+1)
		if rapid.IntRange(0, 9).Draw(t, "reuseRunID") == 9 && m.runs > 0 {
			id = "r" + itoa(m.runs)
		} else {
			m.runs++
		}
		sub := rapid.SampledFrom([]string{"", "", "sub1", "sub2"}).Draw(t, "submission")
		cmd := core.StartRun{AtMs: at, RunID: id, SubmissionID: sub, Input: input(rapid.SampledFrom(texts).Draw(t, "text"))}
		if rapid.IntRange(0, 3).Draw(t, "audio") == 3 {
			cmd.Input = append(cmd.Input, audio(rapid.SampledFrom([]string{"a.m4a", "b.wav"}).Draw(t, "audioFile"), rapid.SampledFrom(texts).Draw(t, "audioBytes")))
		}
		if rapid.IntRange(0, 3).Draw(t, "activate") == 3 {
			cmd.Activations = []core.EntryInput{entryText(core.EntrySkillActivation, "", rapid.SampledFrom(texts).Draw(t, "skill"))}
		}
		return cmd
	case pick < 70:
		m.steers++
		cmd := core.Steer{AtMs: at, SteeringID: "st" + itoa(m.steers), Input: input(rapid.SampledFrom(texts).Draw(t, "steer"))}
		if rapid.IntRange(0, 9).Draw(t, "emptySteer") == 9 {
			cmd.Input = nil
		}
		return cmd
	case pick < 76:
		ids := []string{"nope"}
		for _, r := range s.Runs() {
			ids = append(ids, r.ID)
		}
		return core.CancelRun{AtMs: at, RunID: rapid.SampledFrom(ids).Draw(t, "cancel")}
	case pick < 85:
		n := rapid.IntRange(0, 2).Draw(t, "entries")
		var entries []core.EntryInput
		for i := 0; i < n; i++ {
			kind := rapid.SampledFrom([]string{core.EntryMessage, core.EntryInstructions, core.EntryToolResult, core.EntryCatalog, core.EntrySkillActivation}).Draw(t, "kind")
			key := rapid.SampledFrom([]string{"", "k1", "instructions.a", "instructions.b", "instructions.main", "instructions.", "catalog.skills", "catalog.x", "skill.a"}).Draw(t, "key")
			entries = append(entries, entryText(kind, key, rapid.SampledFrom(texts).Draw(t, "text")))
		}
		source := rapid.SampledFrom([]string{"", core.SourceRuntime}).Draw(t, "source")
		return core.AppendContext{AtMs: at, Entries: entries, ExpectedRevision: m.drawRevision(t, s), Source: source}
	case pick < 94:
		cmd := core.RemoveContext{AtMs: at, ExpectedRevision: m.drawRevision(t, s)}
		if rapid.Bool().Draw(t, "byKey") {
			cmd.Keys = []string{rapid.SampledFrom([]string{"instructions.main", "k1", "instructions.a", "unknown", "catalog.skills", "catalog.x"}).Draw(t, "removeKey")}
		} else {
			// Tool entries first (drawn most often): removing half a
			// call/result pair must be refused.
			var ids, rest []string
			for _, e := range s.Context() {
				if e.Kind == core.EntryToolCall || e.Kind == core.EntryToolResult {
					ids = append(ids, e.ID)
				} else {
					rest = append(rest, e.ID)
				}
			}
			ids = append(append(ids, rest...), "e999")
			cmd.EntryIDs = []string{rapid.SampledFrom(ids).Draw(t, "removeID")}
			if rapid.Bool().Draw(t, "removeTwo") {
				cmd.EntryIDs = append(cmd.EntryIDs, rapid.SampledFrom(ids).Draw(t, "removeID2"))
			}
		}
		return cmd
	case pick < 96:
		cfg := testConfig(rapid.SampledFrom([][]string{{"a"}, {"a", "b"}, {"b", "a"}, {}}).Draw(t, "tools")...)
		if rapid.IntRange(0, 3).Draw(t, "otherAPI") == 3 {
			cfg.Model.APIKind = core.APIAnthropicMessages
		}
		cfg.MaxTurns = rapid.IntRange(0, 4).Draw(t, "maxTurns")
		if slices.Contains(cfg.Tools, "b") && rapid.Bool().Draw(t, "clientTool") {
			cfg.ClientTools = propConfig().ClientTools
		}
		if rapid.Bool().Draw(t, "approvals") {
			for _, name := range slices.Sorted(slices.Values(cfg.Tools)) {
				if rapid.Bool().Draw(t, "approve "+name) {
					cfg.Approvals = append(cfg.Approvals, core.ToolApproval{Tool: name, Policy: core.ApprovalAlways})
				}
			}
		}
		if rapid.IntRange(0, 3).Draw(t, "transcription") > 0 {
			cfg.Transcription = &whisper
		}
		if rapid.IntRange(0, 2).Draw(t, "compaction") == 2 {
			cfg.Compaction = &core.Compaction{Mode: core.CompactionProviderStandalone, ThresholdTokens: int64(rapid.IntRange(0, 12).Draw(t, "threshold"))}
		}
		return core.ChangeConfig{AtMs: at, Config: cfg}
	case pick < 97:
		return core.RequestCompaction{AtMs: at, CompactionID: "k" + itoa(int(at))}
	case pick < 98: // sometimes invalid: no message
		return core.NoteWarning{AtMs: at, Source: "mcp:docs", Message: rapid.SampledFrom([]string{"", "the MCP server docs did not list its tools"}).Draw(t, "warning")}
	default:
		return core.CloseSession{AtMs: at}
	}
}

func (m *propModel) drawRevision(t *rapid.T, s *core.State) *int64 {
	switch rapid.IntRange(0, 3).Draw(t, "expectedRevision") {
	case 0:
		return rev(s.Revision)
	case 1:
		return rev(s.Revision - 1)
	}
	return nil
}

// step tries one command; a rejection must be typed and change nothing.
func (m *propModel) step(t *rapid.T, cmd core.Command) {
	m.cmds = append(m.cmds, cmd)
	before := m.last
	if before == nil {
		before = m.h.snapshot()
	}
	head := len(m.h.events)
	_, err := m.h.admit(cmd)
	if err != nil {
		var rej *core.Rejection
		if !errors.As(err, &rej) {
			t.Fatalf("%T: untyped error %v", cmd, err)
		}
		if !reflect.DeepEqual(before, m.h.state()) || len(m.h.events) != head {
			t.Fatalf("rejected %T (%s) changed the state", cmd, rej.Kind)
		}
	}
	m.check(t)
}

func (m *propModel) check(t *rapid.T) {
	h := m.h
	live := h.state()

	// (a) Replaying the log yields the live state, deep (unexported fields
	// included), and the same exported observations.
	replayed, err := core.Replay(h.events)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if replayed.Head != live.Head || replayed.Revision != live.Revision || replayed.Active != live.Active ||
		!slices.Equal(replayed.Queue, live.Queue) || !reflect.DeepEqual(replayed.Context(), live.Context()) {
		t.Fatalf("replayed observations differ from live state")
	}
	rr, lr := replayed.Runs(), live.Runs()
	if len(rr) != len(lr) {
		t.Fatalf("replayed %d runs, live %d", len(rr), len(lr))
	}
	for i := range rr {
		if rr[i].ID != lr[i].ID || rr[i].Status != lr[i].Status || rr[i].Turns != lr[i].Turns {
			t.Fatalf("run %s differs after replay", lr[i].ID)
		}
	}
	if !reflect.DeepEqual(replayed, live) {
		t.Fatalf("replayed state is not deep-equal to the live state")
	}
	if !live.CountsMatchEntries() {
		t.Fatalf("the state's counts of its entries are not what counting them gives")
	}
	m.last = replayed

	// (e) A checkpoint of the state, decoded and fed the rest of the log,
	// is the live state: at the head and at an earlier point of the log.
	cut := rapid.IntRange(0, len(h.events)).Draw(t, "checkpointAt")
	prefix, err := core.Replay(h.events[:cut])
	if err != nil {
		t.Fatalf("replay prefix: %v", err)
	}
	for _, st := range []*core.State{live, prefix} {
		data, err := core.EncodeCheckpoint(st)
		if err != nil {
			t.Fatalf("encode checkpoint: %v", err)
		}
		restored, err := core.DecodeCheckpoint(data)
		if err != nil {
			t.Fatalf("decode checkpoint: %v", err)
		}
		for _, ev := range h.events[restored.Head:] {
			if err := restored.Apply(ev); err != nil {
				t.Fatalf("checkpoint + tail: %v", err)
			}
		}
		// nil and empty slices differ to DeepEqual but not to the state, so
		// compare what the checkpoint holds: every field of the state.
		got, _ := core.EncodeCheckpoint(restored)
		want, _ := core.EncodeCheckpoint(live)
		if !bytes.Equal(got, want) || !reflect.DeepEqual(restored.Context(), live.Context()) || !reflect.DeepEqual(restored.Runs(), live.Runs()) {
			t.Fatalf("checkpoint at seq %d plus the tail is not the live state:\n got %s\nwant %s", st.Head, got, want)
		}
		// The summary read from the checkpoint's head alone, fed the same
		// tail, is the live state's, from either checkpoint version.
		parts, err := core.EncodeCheckpointParts(st, nil)
		if err != nil {
			t.Fatalf("encode chunked checkpoint: %v", err)
		}
		for _, cp := range [][]byte{data, parts.Index} {
			sum, err := core.CheckpointSummary(cp)
			if err != nil {
				t.Fatalf("checkpoint summary: %v", err)
			}
			for _, ev := range h.events[sum.Head:] {
				if err := sum.Apply(ev); err != nil {
					t.Fatalf("summary + tail: %v", err)
				}
			}
			if !reflect.DeepEqual(sum, live.Summary()) {
				t.Fatalf("the summary of the checkpoint at seq %d plus the tail is %+v, the live state's %+v", st.Head, sum, live.Summary())
			}
		}
	}

	// (e') Every fourth check: the chunked checkpoint of the live state,
	// encoded with the memo of the last one, is the one encoded without a
	// memo, and decodes (with the chunks stored so far) to the live state.
	// (Not every check: it is the costliest one, and memos from further
	// back are as good a test.)
	if m.chunkChecks++; m.chunkChecks%4 == 0 {
		m.checkChunked(t, live)
	}

	// (b) Every turn.planned fingerprint equals the fingerprint of the
	// context replayed up to and including that event.
	for ; m.checked < len(h.events); m.checked++ {
		ev := h.events[m.checked]
		if err := m.shadow.Apply(ev); err != nil {
			t.Fatalf("shadow apply: %v", err)
		}
		if ev.Kind == core.KindTurnPlanned {
			p := payload[core.TurnPlanned](t, ev)
			if fp := core.PlanFingerprint(m.shadow.Config, m.shadow.Context()); fp != p.Fingerprint {
				t.Fatalf("seq %d: planned fingerprint %s, rebuilt %s", ev.Seq, p.Fingerprint, fp)
			}
		}
	}

	// (c) No tool_call entry lacks its tool_result once its turn is
	// completed (only the open turn's calls may still be waiting), and no
	// result is without its call.
	open := map[string]bool{}
	if r := live.ActiveRun(); r != nil && r.Turn != nil && !r.Turn.Completed {
		for _, c := range r.Turn.Calls {
			open[c.CallID] = true
		}
	}
	calls, results := map[string]bool{}, map[string]bool{}
	for _, e := range live.Context() {
		switch e.Kind {
		case core.EntryToolCall:
			calls[e.CallID] = true
		case core.EntryToolResult:
			if e.CallID != "" {
				results[e.CallID] = true
			}
		}
	}
	for id := range calls {
		if !results[id] && !open[id] {
			t.Fatalf("tool call %s has no result though its turn is completed", id)
		}
	}
	for id := range results {
		if !calls[id] {
			t.Fatalf("tool result %s has no call in context", id)
		}
	}

	// A generation's work rebuilds to its planned fingerprint, and within
	// a run each request starts with the exact entries of the one before.
	if in := m.intent(); in.Kind == core.IntentGenerate {
		g := in.Generate
		if core.PlanFingerprint(g.Config, g.Entries) != g.Fingerprint {
			t.Fatalf("generate work for %s/%d does not match its fingerprint", g.RunID, g.Turn)
		}
		key := g.RunID + "/" + itoa(g.Turn)
		m.requests[key] = g.Entries
		if prev, ok := m.requests[g.RunID+"/"+itoa(g.Turn-1)]; ok {
			if len(prev) > len(g.Entries) || !reflect.DeepEqual(prev, g.Entries[:len(prev)]) {
				t.Fatalf("turn %s does not start with the previous turn's request", key)
			}
		}
	}
}

// checkChunked is check (e').
func (m *propModel) checkChunked(t *rapid.T, live *core.State) {
	parts, err := core.EncodeCheckpointParts(live, m.memo)
	if err != nil {
		t.Fatalf("encode chunked checkpoint: %v", err)
	}
	fresh, err := core.EncodeCheckpointParts(live, nil)
	if err != nil || !bytes.Equal(parts.Index, fresh.Index) {
		t.Fatalf("the memo changed the chunked checkpoint (%v):\n got %s\nwant %s", err, parts.Index, fresh.Index)
	}
	for _, b := range parts.New {
		m.chunks[b.Digest] = b.Data
	}
	m.memo = parts.Memo
	if need, err := core.CheckpointNeeds(parts.Index, m.chunks); err != nil || len(need) > 0 {
		t.Fatalf("the chunked checkpoint needs %d blobs never stored (%v)", len(need), err)
	}
	restored, err := core.DecodeCheckpointParts(parts.Index, m.chunks)
	if err != nil {
		t.Fatalf("decode chunked checkpoint: %v", err)
	}
	if got, want := mustEncode(t, restored), mustEncode(t, live); !bytes.Equal(got, want) {
		t.Fatalf("chunked checkpoint is not the live state:\n got %s\nwant %s", got, want)
	}
}

func TestProperty_RandomCommandSequencesKeepCoreInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newPropModel(t)
		steps := rapid.IntRange(1, 80).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			m.step(t, m.drawCommand(t))
		}

		// (d) Determinism: the same commands against an independent
		// session give byte-identical events.
		other := newHarness(t, propConfig())
		for _, cmd := range m.cmds {
			_, _ = other.admit(cmd)
		}
		if len(other.events) != len(m.h.events) {
			t.Fatalf("second run wrote %d events, first %d", len(other.events), len(m.h.events))
		}
		for i := range other.events {
			a, b := encodeEvent(t, m.h.events[i]), encodeEvent(t, other.events[i])
			if !bytes.Equal(a, b) {
				t.Fatalf("event %d differs between runs:\n%s%s", i+1, a, b)
			}
		}
	})
}

// The random sequences must actually reach the interesting states; a
// generator that never completes a tool round would prove little.
func TestProperty_GeneratorCoversEveryEventKind(t *testing.T) {
	seen := map[string]bool{}
	rapid.Check(t, func(t *rapid.T) {
		m := newPropModel(t)
		for i := 0; i < 80; i++ {
			m.step(t, m.drawCommand(t))
		}
		for _, ev := range m.h.events {
			seen[ev.Kind] = true
		}
	})
	for k := range payloadTypes {
		if !seen[k] {
			t.Errorf("no random sequence wrote a %s event", k)
		}
	}
}

// propConfig is the sessions' first config: tools a and b, b run by the
// client, and transcription.
func propConfig() core.SessionConfig {
	cfg := transcribing("a", "b")
	cfg.ClientTools = []core.ClientTool{{Name: "b", Parameters: []byte(`{"type":"object"}`), TimeoutMs: 3}}
	cfg.Approvals = []core.ToolApproval{{Tool: "a", Policy: core.ApprovalAlways}}
	return cfg
}
