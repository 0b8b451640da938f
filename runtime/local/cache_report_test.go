package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/anthropic"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/replay"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/view"
)

// Prompt-cache report tests: sessions played through the real adapters'
// lowering (a replay transport answers), then read back with
// view.ReadCacheReport.

// chatToolCalls is a Chat Completions response asking for one call per name.
func chatToolCalls(n int, cached int, names ...string) json.RawMessage {
	var calls []any
	for i, name := range names {
		calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d_%d", n, i), "type": "function",
			"function": map[string]any{"name": name, "arguments": fmt.Sprintf(`{"q":"%d-%d"}`, n, i)}})
	}
	body, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1764720000 + n, "model": "gpt-4o-mini",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls",
			"message": map[string]any{"role": "assistant", "content": nil, "refusal": nil, "tool_calls": calls}}},
		"usage": map[string]any{"prompt_tokens": 100 + n, "completion_tokens": 5, "total_tokens": 105 + n,
			"prompt_tokens_details": map[string]any{"cached_tokens": cached}},
	})
	return body
}

func cassetteOf(bodies ...json.RawMessage) *replay.Transport {
	c := &replay.Cassette{Format: replay.Format, Version: replay.Version}
	for _, b := range bodies {
		c.Interactions = append(c.Interactions, replay.Interaction{Status: 200, Headers: map[string]string{"Content-Type": "application/json"}, Body: b})
	}
	t := replay.New(c)
	t.RecordRequests = true
	return t
}

// lookupTool answers every call with a short text.
func lookupTool() runtime.Tool {
	return funcTool{name: "lookup", fn: func(context.Context) (runtime.ToolOutput, error) {
		return runtime.ToolOutput{Content: []byte("the game starts at 7 pm")}, nil
	}}
}

// newKindEnv is an env whose executor speaks apiKind through adapter.
func newKindEnv(t *testing.T, apiKind string, adapter provider.Adapter, tools ...runtime.Tool) *env {
	t.Helper()
	blobs := blob.NewMemory()
	reg, err := runtime.NewTools(tools...)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, blobs: blobs, log: store.NewMemory(blobs), tools: reg}
	e.host = New(Options{
		Log: e.log, Blobs: e.blobs,
		Executor: &runtime.Executor{Blobs: e.blobs, Adapters: map[string]provider.Adapter{apiKind: adapter}, Tools: reg, Files: e.log},
		Retry:    RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 50 * time.Millisecond},
	})
	if err := e.host.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.host.Close)
	return e
}

func (e *env) cacheReport(sessionID string) []view.CacheTurn {
	e.t.Helper()
	r, err := view.ReadCacheReport(context.Background(), e.log, e.blobs, sessionID, view.CacheQuery{Limit: view.MaxCacheLimit})
	if err != nil {
		e.t.Fatal(err)
	}
	if r.Cursor != 0 {
		e.t.Fatalf("a whole-session report has cursor %d", r.Cursor)
	}
	return r.Turns
}

func (e *env) runTo(sessionID, text, status string) {
	e.t.Helper()
	if r := e.waitRun(sessionID, e.startRun(sessionID, text)); r.Status != status {
		e.t.Fatalf("run %q ended %s (%+v), want %s", text, r.Status, r.Error, status)
	}
}

// requireWholePrefix checks that every row after the first repeats the whole
// previous request, and that the rows match the requests sent.
func requireWholePrefix(t *testing.T, turns []view.CacheTurn, sent [][]byte) {
	t.Helper()
	if len(turns) != len(sent) {
		t.Fatalf("%d report rows for %d requests", len(turns), len(sent))
	}
	for i, row := range turns {
		if row.RequestBytes != int64(len(sent[i])) || row.SegmentBytes <= 0 || row.SegmentBytes >= row.RequestBytes {
			t.Fatalf("row %d: requestBytes %d, segmentBytes %d; the request sent was %d bytes", i, row.RequestBytes, row.SegmentBytes, len(sent[i]))
		}
		if i == 0 {
			if row.PrefixFraction != nil || row.PreviousSeq != 0 || row.BrokenBy != nil {
				t.Fatalf("the first generation has a previous one: %+v", row)
			}
			continue
		}
		if row.PrefixFraction == nil || *row.PrefixFraction != 1.0 || row.BrokenBy != nil ||
			row.PrefixBytes != turns[i-1].SegmentBytes || row.PrefixSegments != turns[i-1].Segments || row.PreviousSeq != turns[i-1].Seq {
			t.Fatalf("row %d (run %s turn %d) does not repeat the whole previous request: %+v (previous %+v)", i, row.RunID, row.Turn, row, turns[i-1])
		}
		t.Logf("run %s turn %d: %d of %d bytes repeated (previous request %d bytes), %d cached tokens", row.RunID, row.Turn, row.PrefixBytes, row.SegmentBytes, turns[i-1].SegmentBytes, *row.ProviderCachedTokens)
	}
}

// A scripted session with tool rounds, a parallel call and steering, through
// the real Chat Completions lowering: every request repeats all of the
// previous one, and the report says so for every turn.
func TestCacheReport_ChatToolRoundsRepeatTheWholePrefix(t *testing.T) {
	transport := cassetteOf(
		chatToolCalls(0, 0, "lookup"),
		chatToolCalls(1, 64, "lookup", "lookup"),
		chatStop(2, "It starts at 7 pm."),
		chatToolCalls(3, 128, "lookup"),
		chatStop(4, "Bring a coat."),
	)
	adapter := chat.New(endpoint.Static{"openai": {BaseURL: "https://replay.cairn.invalid/v1"}}, &http.Client{Transport: transport})
	e := newKindEnv(t, core.APIChatCompletions, adapter, lookupTool())
	steered := make(chan error, 1)
	transport.OnRequest = func(n int, _ []byte) {
		if n == 0 { // steering admitted during turn 1 enters context at turn 2
			item, err := runtime.TextInput(context.Background(), e.blobs, "and the weather")
			if err == nil {
				_, err = e.host.Submit(context.Background(), "s1", core.Steer{AtMs: 2, SteeringID: "st1", Input: []core.InputItem{item}})
			}
			steered <- err
		}
	}
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "openai", APIKind: core.APIChatCompletions, Model: "gpt-4o-mini"}, Tools: []string{"lookup"}}
	instructions := textEntry(t, e.blobs, core.EntryInstructions, "", "You answer questions about tonight's game.")
	if _, err := e.host.CreateSession(context.Background(), "s1", cfg, &instructions); err != nil {
		t.Fatal(err)
	}
	e.runTo("s1", "when does the game start?", core.StatusCompleted)
	if err := <-steered; err != nil {
		t.Fatal(err)
	}
	e.runTo("s1", "what should I wear?", core.StatusCompleted)

	turns := e.cacheReport("s1")
	requireWholePrefix(t, turns, transport.Requests())
	if c := turns[1].ProviderCachedTokens; c == nil || *c != 64 {
		t.Fatalf("provider cached tokens of turn 2: %v, want the response's cached_tokens 64", c)
	}
}

// The skill catalog changes three times between four runs; each new version
// is appended, so the report shows every request repeating the previous one.
func TestCacheReport_CatalogUpdatesKeepTheWholePrefix(t *testing.T) {
	const runs = 4
	var bodies []json.RawMessage
	for i := range runs {
		bodies = append(bodies, chatStop(i, fmt.Sprintf("answer %d", i)))
	}
	transport := cassetteOf(bodies...)
	adapter := chat.New(endpoint.Static{"openai": {BaseURL: "https://replay.cairn.invalid/v1"}}, &http.Client{Transport: transport})
	e := newFilesEnv(t, &scriptAdapter{fn: func(ctx context.Context, _ int, blobs blob.Store, req provider.Request) (provider.Output, error) {
		return adapter.Generate(ctx, blobs, req)
	}})
	skill := func(v int) string {
		return fmt.Sprintf("---\nname: notes\ndescription: Take notes, version %d.\n---\nBody %d.\n", v, v)
	}
	e.workspace("acorn", map[string]string{
		".cairn/prompts/instructions.md": "You edit release notes.",
		".cairn/skills/notes/SKILL.md":   skill(1),
	})
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "openai", APIKind: core.APIChatCompletions, Model: "gpt-4o-mini"},
		Tools: vfsToolNames(), Links: []core.Link{{Mount: "/work", Workspace: "acorn"}}}
	if _, err := e.host.CreateSession(context.Background(), "s1", cfg, nil); err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		if i > 0 {
			e.writeFile("acorn", ".cairn/skills/notes/SKILL.md", skill(i+1))
		}
		e.runTo("s1", fmt.Sprintf("run %d", i), core.StatusCompleted)
	}
	var catalogs int
	_ = e.host.Inspect(context.Background(), "s1", func(s *core.State) {
		for _, en := range s.Context() {
			if en.Key == core.SkillCatalogKey {
				catalogs++
			}
		}
	})
	if catalogs != runs {
		t.Fatalf("%d catalog versions in context, want %d", catalogs, runs)
	}
	requireWholePrefix(t, e.cacheReport("s1"), transport.Requests())
}

// Replacing the main instructions between runs changes the start of the next
// request: the report keeps only the tools as the shared prefix and names
// the append that replaced instructions.main.
func TestCacheReport_InstructionEditBreaksThePrefixAndIsNamed(t *testing.T) {
	transport := cassetteOf(
		chatStop(0, "hello"),
		chatToolCalls(1, 0, "lookup"),
		chatStop(2, "7 pm"),
		chatStop(3, "bye"),
	)
	adapter := chat.New(endpoint.Static{"openai": {BaseURL: "https://replay.cairn.invalid/v1"}}, &http.Client{Transport: transport})
	e := newKindEnv(t, core.APIChatCompletions, adapter, lookupTool())
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "openai", APIKind: core.APIChatCompletions, Model: "gpt-4o-mini"}, Tools: []string{"lookup"}}
	instructions := textEntry(t, e.blobs, core.EntryInstructions, "", "Be brief.")
	if _, err := e.host.CreateSession(context.Background(), "s1", cfg, &instructions); err != nil {
		t.Fatal(err)
	}
	e.runTo("s1", "hi", core.StatusCompleted)
	edit := textEntry(t, e.blobs, core.EntryInstructions, core.InstructionKeyPrefix+"main", "Be brief and friendly.")
	adm, err := e.host.Submit(context.Background(), "s1", core.AppendContext{AtMs: 3, Entries: []core.EntryInput{edit}})
	if err != nil {
		t.Fatal(err)
	}
	// Unrelated context appended after the edit is the latest change, but it
	// only adds to the tail: it is not what broke the prefix.
	note := textEntry(t, e.blobs, core.EntryMessage, "note", "the user likes baseball")
	if _, err := e.host.Submit(context.Background(), "s1", core.AppendContext{AtMs: 4, Entries: []core.EntryInput{note}}); err != nil {
		t.Fatal(err)
	}
	e.runTo("s1", "when does the game start?", core.StatusCompleted)
	e.runTo("s1", "thanks", core.StatusCompleted)

	var editSeq int64
	for _, ev := range e.events("s1") {
		if ev.Kind != core.KindContextEntriesApplied {
			continue
		}
		var p core.ContextEntriesApplied
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Entries) == 1 && p.Entries[0].ID == adm.EntryIDs[0] {
			editSeq = ev.Seq
		}
	}
	if editSeq == 0 {
		t.Fatal("no event applied the edit")
	}

	turns := e.cacheReport("s1")
	if len(turns) != 4 {
		t.Fatalf("%d rows, want 4", len(turns))
	}
	broken := turns[1]
	want := view.BrokenBy{Seq: editSeq, Kind: core.KindContextEntriesApplied,
		Segment: view.BrokenSegment{Index: 1, Kind: core.SegmentInstructions, Key: core.InstructionKeyPrefix + "main"}}
	if broken.BrokenBy == nil || *broken.BrokenBy != want {
		t.Fatalf("the first turn after the edit: brokenBy %+v, want %+v", broken.BrokenBy, want)
	}
	// Only the tool definition is repeated.
	if broken.PrefixSegments != 1 || broken.PrefixFraction == nil || *broken.PrefixFraction >= 1 || *broken.PrefixFraction <= 0 {
		t.Fatalf("the first turn after the edit: %+v", broken)
	}
	for _, row := range turns[2:] {
		if row.PrefixFraction == nil || *row.PrefixFraction != 1 || row.BrokenBy != nil {
			t.Fatalf("run %s turn %d after the edit: %+v", row.RunID, row.Turn, row)
		}
	}
	t.Logf("edit at seq %d: turn after it repeats %d of %d bytes (%.3f)", editSeq, broken.PrefixBytes, broken.PreviousBytes, *broken.PrefixFraction)
}

// anthropicMessage is a Messages API response.
func anthropicMessage(n int, stop string, cacheRead, cacheWrite int, blocks ...string) json.RawMessage {
	content := "["
	for i, b := range blocks {
		if i > 0 {
			content += ","
		}
		content += b
	}
	content += "]"
	return json.RawMessage(fmt.Sprintf(`{"id":"msg_%02d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":%s,"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":7}}`,
		n, content, stop, 20+n, cacheWrite, cacheRead))
}

// Through the Anthropic lowering, whose cache markers move every turn: the
// segments leave the markers out, so tool rounds still repeat the whole
// previous request, and the report carries the provider's cache figures.
func TestCacheReport_AnthropicToolRoundsRepeatTheWholePrefix(t *testing.T) {
	toolUse := func(n int) string {
		return fmt.Sprintf(`{"type":"tool_use","id":"toolu_%02d","name":"lookup","input":{"q":"%d"}}`, n, n)
	}
	transport := cassetteOf(
		anthropicMessage(0, "tool_use", 0, 900, `{"type":"text","text":"Let me check."}`, toolUse(0)),
		anthropicMessage(1, "tool_use", 900, 120, toolUse(1)),
		anthropicMessage(2, "end_turn", 1020, 80, `{"type":"text","text":"7 pm."}`),
		anthropicMessage(3, "end_turn", 1100, 40, `{"type":"text","text":"A coat."}`),
	)
	adapter := anthropic.New(endpoint.Static{"anthropic": {BaseURL: "https://replay.cairn.invalid"}}, &http.Client{Transport: transport})
	e := newKindEnv(t, core.APIAnthropicMessages, adapter, lookupTool())
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "anthropic", APIKind: core.APIAnthropicMessages, Model: "claude-sonnet-4-5"}, Tools: []string{"lookup"}}
	instructions := textEntry(t, e.blobs, core.EntryInstructions, "", "You answer questions about tonight's game.")
	if _, err := e.host.CreateSession(context.Background(), "s1", cfg, &instructions); err != nil {
		t.Fatal(err)
	}
	e.runTo("s1", "when does the game start?", core.StatusCompleted)
	e.runTo("s1", "what should I wear?", core.StatusCompleted)

	sent := transport.Requests()
	turns := e.cacheReport("s1")
	requireWholePrefix(t, turns, sent)
	for i, want := range []int64{0, 900, 1020, 1100} {
		if c := turns[i].ProviderCachedTokens; c == nil || *c != want || turns[i].ProviderCacheWriteTokens == 0 {
			t.Fatalf("row %d: cached %v, written %d; want cache_read_input_tokens %d", i, c, turns[i].ProviderCacheWriteTokens, want)
		}
	}
	// Yet some body is not a byte prefix of the next one: the moving markers
	// are why the report compares segments rather than bodies.
	moved := false
	for i := 1; i < len(sent); i++ {
		prev := sent[i-1][:len(sent[i-1])-2] // without the closing "]}"
		moved = moved || !bytes.HasPrefix(sent[i], prev)
	}
	if !moved {
		t.Fatal("every Anthropic body is a byte prefix of the next; the markers did not move")
	}
}

// textEntry stores text as an entry input of kind and key.
func textEntry(t *testing.T, blobs blob.Store, kind, key, text string) core.EntryInput {
	t.Helper()
	ref, err := blob.PutRef(context.Background(), blobs, []byte(text), content.MediaText, "")
	if err != nil {
		t.Fatal(err)
	}
	return core.EntryInput{Kind: kind, Key: key, Content: ref, TokenEstimate: provider.Estimate([]byte(text)), Preview: provider.Preview(text)}
}
