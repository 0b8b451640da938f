package core_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// harness drives one session the way a host does: a simulated store assigns
// seqs to proposals, and the test plays the model and the tools.
// tb is what the harness needs of *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

type harness struct {
	t      tb
	d      *core.Drive
	events []core.Event
	now    int64
}

func testConfig(tools ...string) core.SessionConfig {
	return core.SessionConfig{
		Model: core.ModelSelection{ProviderID: "openai", APIKind: core.APIChatCompletions, Model: "gpt-test"},
		Tools: tools,
	}
}

// newHarness opens session "s1" with the given config and instructions "be brief".
func newHarness(t tb, cfg core.SessionConfig) *harness {
	t.Helper()
	return newHarnessOn(t, core.NewState(), cfg)
}

// newHarnessOn is newHarness over a given empty state.
func newHarnessOn(t tb, st *core.State, cfg core.SessionConfig) *harness {
	t.Helper()
	h := &harness{t: t, d: core.NewDrive(st), now: 1_000}
	in := entryText(core.EntryInstructions, "", "be brief")
	h.mustAdmit(core.OpenSession{AtMs: h.tick(), SessionID: "s1", Config: cfg, Instructions: &in})
	return h
}

func (h *harness) tick() int64 { h.now++; return h.now }

func (h *harness) state() *core.State { return h.d.State() }

func text(s string) content.ContentRef { return content.Ref([]byte(s), content.MediaText, "") }

func input(texts ...string) []core.InputItem {
	out := make([]core.InputItem, len(texts))
	for i, s := range texts {
		out[i] = core.InputItem{Content: text(s), TokenEstimate: core.TokenEstimate{Tokens: int64(len(s)/4 + 1), Quality: core.EstimateHeuristic}, Preview: s}
	}
	return out
}

func entryText(kind, key, s string) core.EntryInput {
	return core.EntryInput{Kind: kind, Key: key, Content: text(s), TokenEstimate: core.TokenEstimate{Tokens: int64(len(s)/4 + 1), Quality: core.EstimateHeuristic}, Preview: s}
}

func assistant(s string) core.EntryInput {
	e := entryText(core.EntryMessage, "", s)
	e.Role = core.RoleAssistant
	e.Content.ProviderKind = "chat_completions.message"
	return e
}

func call(id, name string) core.ToolCall {
	return core.ToolCall{CallID: id, Name: name, Arguments: content.Ref([]byte(`{"call":"`+id+`"}`), content.MediaJSON, "")}
}

func toolCallEntry(c core.ToolCall) core.EntryInput {
	return core.EntryInput{Kind: core.EntryToolCall, Content: c.Arguments, CallID: c.CallID, ToolName: c.Name,
		TokenEstimate: core.TokenEstimate{Tokens: 5, Quality: core.EstimateHeuristic}}
}

// admit admits a command and commits every append that follows from it (the
// command's own proposals and whatever the planner proposes next). It returns
// the admission and the first intent that is not an append.
func (h *harness) admit(cmd core.Command) (core.Admission, error) {
	h.t.Helper()
	a, err := h.d.Admit(cmd)
	if err != nil {
		return a, err
	}
	h.settle()
	return a, nil
}

func (h *harness) mustAdmit(cmd core.Command) core.Admission {
	h.t.Helper()
	a, err := h.admit(cmd)
	if err != nil {
		h.t.Fatalf("admit %T: %v", cmd, err)
	}
	return a
}

// rejection admits a command that must be rejected with kind, and checks that
// the state did not change.
func (h *harness) rejection(cmd core.Command, kind string) *core.Rejection {
	h.t.Helper()
	before := h.snapshot()
	_, err := h.d.Admit(cmd)
	var rej *core.Rejection
	if !errors.As(err, &rej) {
		h.t.Fatalf("admit %T: got %v, want rejection %s", cmd, err, kind)
	}
	if rej.Kind != kind {
		h.t.Fatalf("admit %T: rejection %s (%s), want %s", cmd, rej.Kind, rej.Message, kind)
	}
	if !reflect.DeepEqual(before, h.state()) {
		h.t.Fatalf("rejected %T changed the state", cmd)
	}
	if in := h.d.Next(h.now); in.Kind == core.IntentAppend {
		h.t.Fatalf("rejected %T left proposals pending", cmd)
	}
	return rej
}

// snapshot is an independent state deep-equal to the live one (rebuilt from
// the log; replay equals live, which this also checks).
func (h *harness) snapshot() *core.State {
	h.t.Helper()
	s, err := core.Replay(h.events)
	if err != nil {
		h.t.Fatalf("replay: %v", err)
	}
	if !reflect.DeepEqual(s, h.state()) {
		h.t.Fatalf("replayed state differs from the live state")
	}
	return s
}

// settle commits appends until the drive asks for something else.
func (h *harness) settle() core.Intent {
	h.t.Helper()
	for i := 0; ; i++ {
		if i > 1000 {
			h.t.Fatal("the drive keeps proposing appends")
		}
		in := h.d.Next(h.tick())
		if in.Kind != core.IntentAppend {
			return in
		}
		h.commit(in)
	}
}

// commit plays the store: checks the expected head, assigns seqs, feeds back.
func (h *harness) commit(in core.Intent) []core.Event {
	h.t.Helper()
	head := int64(len(h.events))
	if in.ExpectedHead != head {
		h.t.Fatalf("append expects head %d, store is at %d", in.ExpectedHead, head)
	}
	if len(in.Proposals) == 0 {
		h.t.Fatal("append intent with no proposals")
	}
	evs := make([]core.Event, len(in.Proposals))
	for i, p := range in.Proposals {
		evs[i] = p.Committed(head + int64(i) + 1)
		// What a proposal declares is what its stored event yields.
		if got, err := core.EventRefs(evs[i]); err != nil || !slices.Equal(got, p.Refs) {
			h.t.Fatalf("%s declares refs %v, its event yields %v (%v)", p.Kind, p.Refs, got, err)
		}
	}
	if err := h.d.Committed(evs); err != nil {
		h.t.Fatalf("committed: %v", err)
	}
	h.events = append(h.events, evs...)
	return evs
}

func (h *harness) next() core.Intent { h.t.Helper(); return h.settle() }

func (h *harness) expectGenerate() *core.GenerateWork {
	h.t.Helper()
	in := h.next()
	if in.Kind != core.IntentGenerate {
		h.t.Fatalf("intent %s, want generate", in.Kind)
	}
	return in.Generate
}

func (h *harness) expectTools() *core.ToolWork {
	h.t.Helper()
	in := h.next()
	if in.Kind != core.IntentInvokeTools {
		h.t.Fatalf("intent %s, want invoke_tools", in.Kind)
	}
	return in.Tools
}

func (h *harness) expectIdle() {
	h.t.Helper()
	if in := h.next(); in.Kind != core.IntentIdle {
		h.t.Fatalf("intent %s, want idle", in.Kind)
	}
}

// answer plays the model: the generation in flight answers with text.
func (h *harness) answer(s string) *core.GenerateWork {
	h.t.Helper()
	g := h.expectGenerate()
	h.mustAdmit(core.GenerationResult{AtMs: h.tick(), RunID: g.RunID, Turn: g.Turn, Entries: []core.EntryInput{assistant(s)}, Finish: "stop",
		ResponseID: fmt.Sprintf("resp-%s-%d", g.RunID, g.Turn), Usage: core.Usage{InputTokens: 10, OutputTokens: 3}})
	return g
}

// callTools plays the model: the generation in flight asks for calls.
func (h *harness) callTools(calls ...core.ToolCall) *core.GenerateWork {
	h.t.Helper()
	g := h.expectGenerate()
	h.mustAdmit(generationWithCalls(h.tick(), g, calls...))
	return g
}

func generationWithCalls(at int64, g *core.GenerateWork, calls ...core.ToolCall) core.GenerationResult {
	entries := []core.EntryInput{assistant("let me check")}
	for _, c := range calls {
		entries = append(entries, toolCallEntry(c))
	}
	return core.GenerationResult{AtMs: at, RunID: g.RunID, Turn: g.Turn, Entries: entries, ToolCalls: calls, Finish: "tool_calls"}
}

func toolResult(at int64, w *core.ToolWork, callID, status, out string) core.ToolResult {
	r := entryText(core.EntryToolResult, "", out)
	r.Content.MediaType = content.MediaJSON
	return core.ToolResult{AtMs: at, RunID: w.RunID, Turn: w.Turn, CallID: callID, Status: status, Result: r}
}

func (h *harness) kinds() []string {
	out := make([]string, len(h.events))
	for i, ev := range h.events {
		out[i] = ev.Kind
	}
	return out
}

func (h *harness) ofKind(kind string) []core.Event {
	var out []core.Event
	for _, ev := range h.events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

func (h *harness) kindsSince(seq int) []string { return h.kinds()[seq:] }

func payload[T any](t tb, ev core.Event) T {
	t.Helper()
	var p T
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		t.Fatalf("decode %s: %v", ev.Kind, err)
	}
	return p
}

func equalStrings(a, b []string) bool {
	return reflect.DeepEqual(append([]string{}, a...), append([]string{}, b...))
}

func requireKinds(t tb, got []string, want ...string) {
	t.Helper()
	if !equalStrings(got, want) {
		t.Fatalf("event kinds\n got  %q\n want %q", got, want)
	}
}

// contextOf describes the active context as kind/role/callId/preview tuples.
func contextOf(s *core.State) []string {
	var out []string
	for _, e := range s.Context() {
		d := e.Kind
		if e.Role != "" {
			d += "/" + e.Role
		}
		if e.CallID != "" {
			d += "/" + e.CallID
		}
		out = append(out, d+":"+e.Preview)
	}
	return out
}
