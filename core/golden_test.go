package core_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const (
	goldenDir = "testdata/events"
	goldenLog = "testdata/golden-session.jsonl"
)

// goldenScenario is a deterministic session that writes every event kind.
func goldenScenario(t *testing.T) *harness { return goldenScenarioOn(t, core.NewState()) }

func goldenScenarioOn(t *testing.T, st *core.State) *harness {
	h := newHarnessOn(t, st, testConfig("search"))
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{
		entryText(core.EntryMessage, "note", "remember acorn"),
		entryText(core.EntryInstructions, "instructions.style", "use bullet points"),
		entryText(core.EntryMessage, "", "scratch"),
	}, ExpectedRevision: rev(1)})
	h.mustAdmit(core.RemoveContext{AtMs: h.tick(), Keys: []string{"note"}, EntryIDs: []string{"e4"}})
	cfg := testConfig("search")
	cfg.MaxTurns = 8
	h.mustAdmit(core.ChangeConfig{AtMs: h.tick(), Config: cfg})

	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", SubmissionID: "sub-1", Input: input("Draft release notes for Acorn 2.0")})
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("and a tweet")})
	h.mustAdmit(core.Steer{AtMs: h.tick(), SteeringID: "st-1", Input: input("mention the parser fix")})
	g := h.expectGenerate()
	res := generationWithCalls(h.tick(), g, call("call-1", "search"), call("call-2", "shell"))
	res.ResponseID, res.Usage = "resp-1", core.Usage{InputTokens: 120, OutputTokens: 30, CachedInputTokens: 64}
	res.Cache = goldenCacheFacts(g)
	h.mustAdmit(res)
	w := h.expectTools()
	h.mustAdmit(toolResult(h.tick(), w, "call-1", core.CallOK, `{"changes":["parser fix"]}`))
	h.answer("Acorn 2.0: parser fix")

	g = h.expectGenerate() // r2 started
	h.mustAdmit(core.GenerationResult{AtMs: h.tick(), RunID: g.RunID, Turn: g.Turn, Finish: "error",
		Failure: &core.Failure{Kind: "provider_error", Message: "the provider returned 500", Ref: &core.ModelFailedRef}})

	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r3", Input: input("one more")})
	h.expectGenerate()
	h.mustAdmit(core.CancelRun{AtMs: h.tick(), RunID: "r3", Reason: "user cancelled"})

	h.mustAdmit(core.RequestCompaction{AtMs: h.tick(), CompactionID: "k1"})
	w1 := h.next().Compact
	h.mustAdmit(core.CompactionResult{AtMs: h.tick(), CompactionID: w1.CompactionID, ContextRevision: w1.ContextRevision,
		Failure: &core.Failure{Kind: "compaction_failed", Message: "no compaction item"}})
	h.mustAdmit(core.RequestCompaction{AtMs: h.tick(), CompactionID: "k2"})
	w2 := h.next().Compact
	h.mustAdmit(core.CompactionResult{AtMs: h.tick(), CompactionID: w2.CompactionID, ContextRevision: w2.ContextRevision,
		Entries: []core.EntryInput{entryText(core.EntrySummary, "", "Acorn 2.0 notes drafted; parser fix mentioned")}, Usage: core.Usage{InputTokens: 300, OutputTokens: 20}})

	// Audio input: transcribed before its turn, or failing its run.
	cfg.Transcription = &whisper
	h.mustAdmit(core.ChangeConfig{AtMs: h.tick(), Config: cfg})
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r4", Input: []core.InputItem{input("summarize this memo")[0], audio("memo.m4a", "m4a bytes")}})
	h.mustAdmit(transcribed(h.tick(), h.expectTranscribe(), "ship Acorn 2.1 on Friday"))
	h.answer("Acorn 2.1 ships on Friday")
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r5", Input: []core.InputItem{audio("call.wav", "wav bytes")}})
	h.mustAdmit(core.TranscriptionResult{AtMs: h.tick(), RunID: h.expectTranscribe().RunID,
		Failure: &core.Failure{Kind: core.FailureTranscription, Message: "provider error (terminal, HTTP 400): unsupported audio"}})

	// A client tool: its call waits for the client's result.
	cfg.ClientTools = []core.ClientTool{{Name: "lookup", Description: "Look a ticket up.", Parameters: []byte(`{"type":"object"}`)}}
	cfg.Tools = append(cfg.Tools, "lookup")
	h.mustAdmit(core.ChangeConfig{AtMs: h.tick(), Config: cfg})
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r6", Input: input("what is ticket 7?")})
	h.callTools(call("call-7", "lookup"))
	h.expectIdle()
	h.mustAdmit(core.SubmitToolOutput{AtMs: h.tick(), CallID: "call-7", Result: entryText(core.EntryToolResult, "", "ticket 7: open")})
	h.answer("Ticket 7 is open.")

	// An approval: the call waits for a person's decision, then runs.
	cfg.Approvals = []core.ToolApproval{{Tool: "search", Policy: core.ApprovalAlways}}
	h.mustAdmit(core.ChangeConfig{AtMs: h.tick(), Config: cfg})
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r7", Input: input("search for ticket 8")})
	h.callTools(call("call-8", "search"))
	h.expectIdle()
	h.mustAdmit(core.DecideApproval{AtMs: h.tick(), CallID: "call-8", Approve: true, Reason: "fine"})
	h.mustAdmit(toolResult(h.tick(), h.expectTools(), "call-8", core.CallOK, "ticket 8: closed"))
	h.answer("Ticket 8 is closed.")

	// A config change asked for during a run applies once it has ended.
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r8", Input: input("anything else?")})
	changed := cfg
	changed.Model.Model = "gpt-test-2"
	instr := entryText(core.EntryInstructions, "", "answer in French")
	h.mustAdmit(core.ChangeConfig{AtMs: h.tick(), Config: changed, Instructions: &instr})
	h.answer("Rien d'autre.")
	h.expectIdle()
	h.mustAdmit(core.NoteWarning{AtMs: h.tick(), Source: "mcp:docs", Message: "the MCP server docs did not list its tools; the session keeps its last list"})
	h.mustAdmit(core.CloseSession{AtMs: h.tick(), Reason: "done"})
	return h
}

// goldenCacheFacts are request facts as the executor records them: the
// request's segments (tools, instructions, messages) stored as a list.
func goldenCacheFacts(g *core.GenerateWork) *core.CacheFacts {
	var segs []core.CacheSegment
	for _, name := range g.Config.Tools {
		segs = append(segs, core.NewCacheSegment(core.SegmentTool, name, []byte(`{"name":"`+name+`"}`), nil))
	}
	for _, e := range g.Entries {
		segs = append(segs, core.NewCacheSegment(e.Kind, "", []byte(e.Content.Digest.String()), []core.Entry{e}))
	}
	list, err := core.EncodeSegments(segs)
	if err != nil {
		panic(err)
	}
	return &core.CacheFacts{ProviderID: g.Config.Model.ProviderID, APIKind: g.Config.Model.APIKind, Model: g.Config.Model.Model,
		RequestBytes: 2048, SegmentBytes: core.SegmentTotal(segs), SegmentCount: len(segs),
		Segments: content.Ref(list, core.MediaRequestSegments, "")}
}

// declaredKinds reads every Kind* constant from kinds.go, so a new event
// kind without a fixture fails this test.
func declaredKinds(t *testing.T) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "kinds.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Kind") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				v, _ := strconv.Unquote(lit.Value)
				kinds = append(kinds, v)
			}
		}
	}
	if len(kinds) < 22 {
		t.Fatalf("found only %d kinds in kinds.go", len(kinds))
	}
	return kinds
}

func encodeEvent(t tb, ev core.Event) []byte {
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return append(raw, '\n')
}

func TestGolden_EveryEventKindEncodingIsPinned(t *testing.T) {
	h := goldenScenario(t)
	first := map[string]core.Event{}
	var log bytes.Buffer
	for _, ev := range h.events {
		if _, ok := first[ev.Kind]; !ok {
			first[ev.Kind] = ev
		}
		log.Write(encodeEvent(t, ev))
	}
	kinds := declaredKinds(t)
	for _, k := range kinds {
		if _, ok := first[k]; !ok {
			t.Errorf("the golden scenario writes no %s event", k)
		}
	}
	if len(first) != len(kinds) {
		t.Errorf("scenario wrote %d kinds, kinds.go declares %d", len(first), len(kinds))
	}
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		old, _ := filepath.Glob(filepath.Join(goldenDir, "*.json"))
		for _, f := range old {
			os.Remove(f)
		}
		for k, ev := range first {
			if err := os.WriteFile(filepath.Join(goldenDir, k+".json"), encodeEvent(t, ev), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(goldenLog, log.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range kinds {
		want, err := os.ReadFile(filepath.Join(goldenDir, k+".json"))
		if err != nil {
			t.Errorf("%s: no fixture (run go test ./core -run Golden -update): %v", k, err)
			continue
		}
		if got := encodeEvent(t, first[k]); !bytes.Equal(got, want) {
			t.Errorf("%s encoding changed (bump its version instead of changing v1):\n got  %s want %s", k, got, want)
		}
	}
	files, _ := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if len(files) != len(kinds) {
		t.Errorf("%d fixture files for %d kinds", len(files), len(kinds))
	}
	want, err := os.ReadFile(goldenLog)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(log.Bytes(), want) {
		t.Errorf("the golden session log changed")
	}
}

func readGoldenLog(t *testing.T) []core.Event { return readLog(t, goldenLog) }

// olderLog is the golden log as the core of 2026-12-03 wrote it: each
// tool result joined the context as its call completed.
const olderLog = "testdata/older-session-per-call-results.jsonl"

// A log an older core wrote still replays: its results, applied as each
// call completed, stay where they are, one per call, and a checkpoint of
// the replayed state restores it.
func TestGolden_OlderLogWithPerCallResultsReplays(t *testing.T) {
	s := core.NewState()
	for _, ev := range readLog(t, olderLog) {
		if err := s.Apply(ev); err != nil {
			t.Fatalf("older log: %v", err)
		}
		if ev.Kind == core.KindToolBatchCompleted { // r1's batch: both results in
			var results []string
			for _, e := range s.Context() {
				if e.Kind == core.EntryToolResult {
					results = append(results, e.CallID)
				}
			}
			requireKinds(t, results, "call-2", "call-1") // as they completed
			requireEveryToolCallAnswered(t, s)
		}
	}
	if !s.Closed || s.HasWork() || len(s.Runs()) != 5 {
		t.Fatalf("older log replays to %d runs, closed %v", len(s.Runs()), s.Closed)
	}
	requireEveryToolCallAnswered(t, s)
	cp, err := core.EncodeCheckpoint(s)
	if err != nil {
		t.Fatal(err)
	}
	restored, err := core.DecodeCheckpoint(cp)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := core.EncodeCheckpoint(restored)
	if !bytes.Equal(cp, again) {
		t.Fatal("the replayed older log does not survive its checkpoint")
	}
}

// A state told to apply results per call proposes what the older core did:
// the golden scenario then writes the older log's events, byte for byte,
// up to where the scenario goes on past it.
func TestGolden_ResultsPerCallProposeWhatTheOlderCoreDid(t *testing.T) {
	st := core.NewState()
	st.ApplyResultsPerCall()
	h := goldenScenarioOn(t, st)
	older := readLog(t, olderLog)
	same := len(older) - 1 // all but its session.closed
	for i := range same {
		got, want := encodeEvent(t, h.events[i]), encodeEvent(t, older[i])
		if !bytes.Equal(got, want) {
			t.Fatalf("event %d:\n got  %s\n want %s", i+1, got, want)
		}
	}
}

func readLog(t *testing.T, path string) []core.Event {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []core.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev core.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// payloadTypes maps each kind to its v1 payload struct.
var payloadTypes = map[string]any{
	core.KindSessionOpened:                core.SessionOpened{},
	core.KindSessionConfigChanged:         core.SessionConfigChanged{},
	core.KindSessionClosed:                core.SessionClosed{},
	core.KindSessionWarning:               core.SessionWarning{},
	core.KindSessionConfigChangeRequested: core.SessionConfigChangeRequested{},
	core.KindRunAccepted:                  core.RunAccepted{},
	core.KindRunStarted:                   core.RunStarted{},
	core.KindRunSteeringAccepted:          core.RunSteeringAccepted{},
	core.KindRunCancelRequested:           core.RunCancelRequested{},
	core.KindRunCompleted:                 core.RunCompleted{},
	core.KindRunFailed:                    core.RunFailed{},
	core.KindRunCancelled:                 core.RunCancelled{},
	core.KindRunTranscriptionRequested:    core.RunTranscriptionRequested{},
	core.KindRunTranscriptionCompleted:    core.RunTranscriptionCompleted{},
	core.KindTurnStarted:                  core.TurnStarted{},
	core.KindTurnPlanned:                  core.TurnPlanned{},
	core.KindTurnGenerationRequested:      core.TurnGenerationRequested{},
	core.KindTurnGenerationCompleted:      core.TurnGenerationCompleted{},
	core.KindTurnCompleted:                core.TurnCompleted{},
	core.KindToolBatchStarted:             core.ToolBatchStarted{},
	core.KindToolCallStarted:              core.ToolCallStarted{},
	core.KindToolCallCompleted:            core.ToolCallCompleted{},
	core.KindToolBatchCompleted:           core.ToolBatchCompleted{},
	core.KindToolCallAwaiting:             core.ToolCallAwaiting{},
	core.KindToolApprovalRequested:        core.ToolApprovalRequested{},
	core.KindToolApprovalDecided:          core.ToolApprovalDecided{},
	core.KindContextEntriesApplied:        core.ContextEntriesApplied{},
	core.KindContextEntriesRemoved:        core.ContextEntriesRemoved{},
	core.KindContextKeysRemoved:           core.ContextKeysRemoved{},
	core.KindContextCompacted:             core.ContextCompacted{},
	core.KindCompactionRequested:          core.CompactionRequested{},
	core.KindCompactionCompleted:          core.CompactionCompleted{},
	core.KindCompactionFailed:             core.CompactionFailed{},
}

// Fixtures are read back without the code that wrote them: every one decodes
// strictly into its payload type, re-encodes to the same bytes, and applies
// via State.Apply at its place in the golden log.
func TestGolden_FixturesDecodeAndApplyInOrder(t *testing.T) {
	log := readGoldenLog(t)
	s := core.NewState()
	for _, ev := range log {
		if err := s.Apply(ev); err != nil {
			t.Fatalf("golden log: %v", err)
		}
	}
	if !s.Closed || s.HasWork() || len(s.Runs()) != 8 || s.Config.Model.Model != "gpt-test-2" || s.PendingConfig != nil {
		t.Fatalf("golden log replays to %+v", s)
	}
	statuses := []string{}
	for _, r := range s.Runs() {
		statuses = append(statuses, r.Status)
	}
	requireKinds(t, statuses, core.StatusCompleted, core.StatusFailed, core.StatusCancelled, core.StatusCompleted, core.StatusFailed, core.StatusCompleted, core.StatusCompleted, core.StatusCompleted)

	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	sort.Strings(files)
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var ev core.Event
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if ev.Kind+".json" != filepath.Base(file) || ev.Version != core.EventVersion {
			t.Fatalf("%s holds %s v%d", file, ev.Kind, ev.Version)
		}
		proto, ok := payloadTypes[ev.Kind]
		if !ok {
			t.Fatalf("%s: no payload type for %s", file, ev.Kind)
		}
		p := reflect.New(reflect.TypeOf(proto))
		pdec := json.NewDecoder(bytes.NewReader(ev.Payload))
		pdec.DisallowUnknownFields()
		if err := pdec.Decode(p.Interface()); err != nil {
			t.Fatalf("%s payload: %v", file, err)
		}
		again, err := json.Marshal(p.Interface())
		if err != nil || !bytes.Equal(again, ev.Payload) {
			t.Fatalf("%s payload does not round-trip:\n file %s\n back %s", file, ev.Payload, again)
		}
		if got := encodeEvent(t, ev); !bytes.Equal(got, raw) {
			t.Fatalf("%s event does not round-trip", file)
		}
		// It applies at its place in the log.
		if ev.Seq < 1 || int(ev.Seq) > len(log) {
			t.Fatalf("%s seq %d outside the golden log", file, ev.Seq)
		}
		prefix, err := core.Replay(log[:ev.Seq-1])
		if err != nil {
			t.Fatal(err)
		}
		if err := prefix.Apply(ev); err != nil {
			t.Fatalf("%s does not apply: %v", file, err)
		}
		if !reflect.DeepEqual(log[ev.Seq-1], ev) {
			t.Fatalf("%s differs from event %d of the golden log", file, ev.Seq)
		}
	}
}
