package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/store/sqlite"
)

// benchStore opens a fresh store for a benchmark.
func benchStore(b *testing.B) *sqlite.Store {
	b.Helper()
	st, err := sqlite.Open(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

func benchConfig() core.SessionConfig {
	return core.SessionConfig{
		Model: core.ModelSelection{ProviderID: "openai", APIKind: core.APIChatCompletions, Model: "gpt-4o-mini"},
		Tools: []string{"lookup"},
	}
}

// typicalProposal is a turn.generation_completed event asking for one tool
// call: about 300 bytes of payload, one blob ref (so the append checks the
// ref and records a root), joins of a run and a turn.
func typicalProposal(b *testing.B, st *sqlite.Store) core.Proposal {
	b.Helper()
	ctx := context.Background()
	d, err := st.Put(ctx, []byte(`{"version":"2.0"}`))
	if err != nil {
		b.Fatal(err)
	}
	const run = "run_0123456789abcdef"
	payload, err := json.Marshal(core.TurnGenerationCompleted{
		RunID: run, Turn: 3, Finish: "tool_calls",
		Usage:     core.Usage{InputTokens: 1834, OutputTokens: 27},
		ToolCalls: []core.ToolCall{{CallID: "call_Xk3vPq9sT2mWc8Lr", Name: "read_changelog", Arguments: content.ContentRef{Digest: d, MediaType: content.MediaJSON}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	if n := len(payload); n < 250 || n > 350 {
		b.Fatalf("payload is %d bytes, want about 300: %s", n, payload)
	}
	return core.Proposal{ObservedAtMs: 1_700_000_000_000, Joins: []string{"run:" + run, "turn:" + run + "/3"},
		Kind: core.KindTurnGenerationCompleted, Version: core.EventVersion, Payload: payload, Refs: []content.Digest{d}}
}

// openBenchSession appends session.opened and returns the head (1).
func openBenchSession(b *testing.B, st *sqlite.Store, id string) int64 {
	b.Helper()
	payload, err := json.Marshal(core.SessionOpened{SessionID: id, Config: benchConfig()})
	if err != nil {
		b.Fatal(err)
	}
	evs, err := st.Append(context.Background(), id, 0, []core.Proposal{{ObservedAtMs: 1, Kind: core.KindSessionOpened, Version: core.EventVersion, Payload: payload}})
	if err != nil {
		b.Fatal(err)
	}
	return evs[len(evs)-1].Seq
}

func benchmarkAppend(b *testing.B, perAppend int) {
	st := benchStore(b)
	ctx := context.Background()
	p := typicalProposal(b, st)
	props := make([]core.Proposal, perAppend)
	for i := range props {
		props[i] = p
	}
	head := openBenchSession(b, st, "bench")
	b.SetBytes(int64(perAppend * len(p.Payload)))
	b.ReportAllocs()
	for b.Loop() {
		evs, err := st.Append(ctx, "bench", head, props)
		if err != nil {
			b.Fatal(err)
		}
		if len(evs) != perAppend || evs[0].Seq != head+1 {
			b.Fatalf("append after %d committed %d events from seq %d", head, len(evs), evs[0].Seq)
		}
		head += int64(perAppend)
	}
	b.ReportMetric(float64(b.N*perAppend)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(len(p.Payload)), "payload-B")
	if got, err := st.Session(ctx, "bench"); err != nil || got.Head != head {
		b.Fatalf("session head %d (%v), want %d", got.Head, err, head)
	}
}

// BenchmarkAppendSingle appends one ~300-byte event per transaction.
func BenchmarkAppendSingle(b *testing.B) { benchmarkAppend(b, 1) }

// BenchmarkAppendBatch16 appends sixteen ~300-byte events per transaction.
func BenchmarkAppendBatch16(b *testing.B) { benchmarkAppend(b, 16) }

// sessionWriter is what sessionBuilder writes through: a *sqlite.Store, or
// a recorder of the calls a turn makes.
type sessionWriter interface {
	Put(ctx context.Context, data []byte) (content.Digest, error)
	Append(ctx context.Context, sessionID string, expectedHead int64, proposals []core.Proposal) ([]core.Event, error)
}

// sessionBuilder drives a real session through core.Drive, committing every
// step to the store the way a host does, and plays the model and the tool.
type sessionBuilder struct {
	b    *testing.B
	st   sessionWriter
	id   string
	d    *core.Drive
	now  int64
	runs []string
}

func (x *sessionBuilder) tick() int64 { x.now++; return x.now }

// ref stores data and returns its ref.
func (x *sessionBuilder) ref(data, mediaType, providerKind string) content.ContentRef {
	x.b.Helper()
	d, err := x.st.Put(context.Background(), []byte(data))
	if err != nil {
		x.b.Fatal(err)
	}
	return content.ContentRef{Digest: d, MediaType: mediaType, ProviderKind: providerKind}
}

func (x *sessionBuilder) estimate(s string) core.TokenEstimate {
	return core.TokenEstimate{Tokens: int64(len(s)+3)/4 + 4, Quality: core.EstimateHeuristic}
}

// admit admits cmd and commits appends until the drive asks for other work.
func (x *sessionBuilder) admit(cmd core.Command) core.Intent {
	x.b.Helper()
	if _, err := x.d.Admit(cmd); err != nil {
		x.b.Fatalf("admit %T: %v", cmd, err)
	}
	for {
		in := x.d.Next(x.tick())
		if in.Kind != core.IntentAppend {
			return in
		}
		evs, err := x.st.Append(context.Background(), x.id, in.ExpectedHead, in.Proposals)
		if err != nil {
			x.b.Fatal(err)
		}
		if err := x.d.Committed(evs); err != nil {
			x.b.Fatal(err)
		}
	}
}

func (x *sessionBuilder) assistant(text string) core.EntryInput {
	native, _ := json.Marshal(map[string]string{"role": "assistant", "content": text})
	return core.EntryInput{Kind: core.EntryMessage, Role: core.RoleAssistant,
		Content: x.ref(string(native), content.MediaJSON, "openai.chat.message"), TokenEstimate: x.estimate(text), Preview: text}
}

// run plays one run: a user message, optionally a tool round, an answer.
func (x *sessionBuilder) run(n int, withTool bool) {
	x.b.Helper()
	id := fmt.Sprintf("run_%016x", n)
	x.runs = append(x.runs, id)
	text := fmt.Sprintf("Question %d: what changed in module %d since the last release?", n, n%37)
	in := x.admit(core.StartRun{AtMs: x.tick(), RunID: id, Input: []core.InputItem{{
		Content: x.ref(text, content.MediaText, ""), TokenEstimate: x.estimate(text), Preview: text}}})
	if in.Kind != core.IntentGenerate {
		x.b.Fatalf("run %d: intent %s, want generate", n, in.Kind)
	}
	if withTool {
		callID := fmt.Sprintf("call_%d", n)
		args := fmt.Sprintf(`{"module":%d}`, n%37)
		call := core.ToolCall{CallID: callID, Name: "lookup", Arguments: x.ref(args, content.MediaJSON, "")}
		callEntry := core.EntryInput{Kind: core.EntryToolCall, Role: core.RoleAssistant, CallID: callID, ToolName: "lookup",
			Content:       x.ref(fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":"lookup","arguments":%q}}`, callID, args), content.MediaJSON, "openai.chat.tool_call"),
			TokenEstimate: x.estimate(args), Preview: "lookup(" + args + ")"}
		in = x.admit(core.GenerationResult{AtMs: x.tick(), RunID: id, Turn: in.Generate.Turn, Finish: "tool_calls",
			Entries: []core.EntryInput{x.assistant(""), callEntry}, ToolCalls: []core.ToolCall{call}, Usage: core.Usage{InputTokens: 900, OutputTokens: 20}})
		if in.Kind != core.IntentInvokeTools {
			x.b.Fatalf("run %d: intent %s, want invoke_tools", n, in.Kind)
		}
		result := fmt.Sprintf("module %d: 3 fixes, 1 feature, no breaking changes", n%37)
		in = x.admit(core.ToolResult{AtMs: x.tick(), RunID: id, Turn: in.Tools.Turn, CallID: callID, Status: core.CallOK,
			Result: core.EntryInput{Content: x.ref(result, content.MediaText, ""), TokenEstimate: x.estimate(result), Preview: result}})
		if in.Kind != core.IntentGenerate {
			x.b.Fatalf("run %d: intent %s after the tool, want generate", n, in.Kind)
		}
	}
	answer := fmt.Sprintf("Module %d gained one feature and three fixes; nothing breaks. (answer %d)", n%37, n)
	in = x.admit(core.GenerationResult{AtMs: x.tick(), RunID: id, Turn: in.Generate.Turn, Finish: "stop",
		Entries: []core.EntryInput{x.assistant(answer)}, Usage: core.Usage{InputTokens: 1000, OutputTokens: 40}})
	if in.Kind != core.IntentIdle || x.d.State().Run(id).Status != core.StatusCompleted {
		x.b.Fatalf("run %d did not complete (intent %s)", n, in.Kind)
	}
}

// trim removes the entries of all but the last keepRuns runs, as a client
// keeping its context small would.
func (x *sessionBuilder) trim(keepRuns int) {
	old := map[string]bool{}
	for _, r := range x.runs[:len(x.runs)-keepRuns] {
		old[r] = true
	}
	var ids []string
	for _, e := range x.d.State().Context() {
		if old[e.RunID] {
			ids = append(ids, e.ID)
		}
	}
	if len(ids) > 0 {
		x.admit(core.RemoveContext{AtMs: x.tick(), EntryIDs: ids})
	}
}

// buildSession writes a session of exactly `events` events made of real
// runs (every other one with a tool round), topped up with context appends.
// With maxEntries > 0 the context is trimmed whenever it exceeds that many entries.
func buildSession(b *testing.B, st *sqlite.Store, id string, events int64, maxEntries int) *core.State {
	b.Helper()
	x := &sessionBuilder{b: b, st: st, id: id, d: core.NewDrive(core.NewState()), now: 1_700_000_000_000}
	instr := "You are a release editor. Answer from the changelog only."
	x.admit(core.OpenSession{AtMs: x.tick(), SessionID: id, Config: benchConfig(), Instructions: &core.EntryInput{
		Content: x.ref(instr, content.MediaText, ""), TokenEstimate: x.estimate(instr), Preview: instr}})
	const maxRunEvents = 21 // a run with a tool round writes 20 events, a trim 1
	for n := 0; x.d.State().Head+maxRunEvents <= events; n++ {
		x.run(n, n%2 == 0)
		if maxEntries > 0 && x.d.State().EntryCount() > maxEntries {
			x.trim(20)
		}
	}
	for n := 0; x.d.State().Head < events; n++ {
		note := fmt.Sprintf("note %d", n)
		x.admit(core.AppendContext{AtMs: x.tick(), Entries: []core.EntryInput{{Kind: core.EntryMessage,
			Content: x.ref(note, content.MediaText, ""), TokenEstimate: x.estimate(note), Preview: note}}})
	}
	if x.d.State().Head != events {
		b.Fatalf("built %d events, want %d", x.d.State().Head, events)
	}
	return x.d.State()
}

// BenchmarkReplay10k reads a 10,000-event session back in pages of 1000 and
// replays it through the core reducer, as a host does when it loads a session.
func BenchmarkReplay10k(b *testing.B) {
	for _, bc := range []struct {
		name       string
		maxEntries int
	}{
		{"context=200", 200},
		{"context=unbounded", 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			const events = 10_000
			st := benchStore(b)
			ctx := context.Background()
			live := buildSession(b, st, "replay", events, bc.maxEntries)
			var got *core.State
			var reading time.Duration
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				all := make([]core.Event, 0, events)
				for {
					page, err := st.ReadAfter(ctx, "replay", int64(len(all)), 1000)
					if err != nil {
						b.Fatal(err)
					}
					all = append(all, page...)
					if len(page) < 1000 {
						break
					}
				}
				reading += time.Since(start)
				s, err := core.Replay(all)
				if err != nil {
					b.Fatal(err)
				}
				got = s
			}
			b.ReportMetric(float64(b.N*events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(reading.Nanoseconds())/float64(b.N), "read-ns/op")
			b.ReportMetric(float64(live.EntryCount()), "entries")
			if got.Head != events || !reflect.DeepEqual(got, live) {
				b.Fatalf("replayed state (head %d) differs from the live state (head %d)", got.Head, live.Head)
			}
			if strings.Contains(b.Name(), "200") && live.EntryCount() > bc.maxEntries {
				b.Fatalf("context has %d entries, want at most %d", live.EntryCount(), bc.maxEntries)
			}
		})
	}
}

// BenchmarkFork creates history forks of sessions of 1,000 and 100,000
// events, then reads each fork's latest page (through its source): one
// catalog row and one bounded read, whatever the source's length.
func BenchmarkFork(b *testing.B) {
	for _, n := range []int64{1_000, 100_000} {
		b.Run(fmt.Sprintf("source=%d", n), func(b *testing.B) {
			st := benchStore(b)
			ctx := context.Background()
			batch := []core.Proposal{{ObservedAtMs: 1, Kind: core.KindSessionOpened, Version: core.EventVersion, Payload: []byte(`{"sessionId":"src"}`)}}
			for head := int64(0); head < n; {
				for int64(len(batch)) < min(1000, n-head) {
					batch = append(batch, core.Proposal{ObservedAtMs: 2, Kind: "test.note", Version: core.EventVersion,
						Payload: fmt.Appendf(nil, `{"n":%d}`, head+int64(len(batch))+1)})
				}
				if _, err := st.Append(ctx, "src", head, batch); err != nil {
					b.Fatal(err)
				}
				head += int64(len(batch))
				batch = batch[:0]
			}
			i := 0
			for b.Loop() {
				id := fmt.Sprintf("fork-%d", i)
				i++
				if _, err := st.Fork(ctx, store.ForkRequest{SessionID: id, Source: "src", AtSeq: n, AtMs: 1}); err != nil {
					b.Fatal(err)
				}
				page, err := st.ReadBefore(ctx, id, n+1, 50)
				if err != nil || len(page) != 50 || page[49].Seq != n {
					b.Fatalf("fork's last page: %d events, %v", len(page), err)
				}
			}
		})
	}
}
