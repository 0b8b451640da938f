package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

var update = flag.Bool("update", false, "rewrite golden request bytes in testdata/")

var testTools = []provider.Tool{
	{Name: "get_current_weather", Description: "Weather for a location.", Parameters: json.RawMessage(`{
		"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}`)},
	{Name: "search", Description: "Search the web <fast> & cheap.", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)},
	{Name: "noop"},
}

func request(b *ctxBuilder) provider.Request {
	return provider.Request{
		SessionID: "sess-01",
		Model:     core.ModelSelection{ProviderID: "openai", APIKind: APIKind, Model: "gpt-5"},
		Entries:   b.entries,
		Tools:     testTools,
	}
}

func lower(t *testing.T, b *ctxBuilder, req provider.Request, opts LowerOptions) []byte {
	t.Helper()
	body, err := Lower(context.Background(), b.blobs, req, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(body) {
		t.Fatalf("invalid JSON: %s", body)
	}
	return body
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("request bytes differ from %s:\n got %s\nwant %s", path, got, want)
	}
}

// goldenContext is a tool loop with reasoning: two instruction entries, a
// question, a function call and its result, a reasoning + answer generation,
// a refused follow-up and one more question.
func goldenContext(t *testing.T) *ctxBuilder {
	b := newCtx(t)
	b.instructions("instructions.a", "You are the weather desk.")
	b.instructions("instructions.b", "Answer in one sentence.\nCite <sources> & units.")
	b.user("What's the weather in Boston?")
	b.decode(readPayload(t, "api-reference-function-call.json"))
	b.decode(readPayload(t, "reasoning-encrypted-summary.json"))
	b.user("Now something you won't do.")
	b.decode(readPayload(t, "refusal.json"))
	b.user("Thanks — and in Detroit?")
	return b
}

func TestGoldenRequest(t *testing.T) {
	b := goldenContext(t)
	golden(t, "request-tool-loop.json", lower(t, b, request(b), LowerOptions{}))

	req := request(b)
	req.Params = json.RawMessage(`{"extra":{"metadata":{"team":"weather"},"text":{"verbosity":"low"},"truncation":"auto"},` +
		`"include":["reasoning.encrypted_content","message.output_text.logprobs"],"maxOutputTokens":2048,"parallelToolCalls":false,` +
		`"reasoning":{"effort":"high","summary":"auto"},"serviceTier":"flex","store":true,"temperature":0.2,"topP":0.9,"version":1}`)
	golden(t, "request-tool-loop-params.json", lower(t, b, req, LowerOptions{}))
}

func TestGoldenRequestMinimal(t *testing.T) {
	b := newCtx(t)
	b.user("hi")
	req := provider.Request{Model: core.ModelSelection{Model: "gpt-4o-mini"}, Entries: b.entries}
	body := lower(t, b, req, LowerOptions{})
	// No instructions, tools or session: only what was given, plus the
	// defaults that keep reasoning replayable without provider storage.
	want := `{"model":"gpt-4o-mini","input":[{"role":"user","content":"hi"}],"include":["reasoning.encrypted_content"],"store":false}`
	if string(body) != want {
		t.Fatalf("got  %s\nwant %s", body, want)
	}
}

func TestLowerLayout(t *testing.T) {
	b := goldenContext(t)
	body := lower(t, b, request(b), LowerOptions{})
	r := parseRequest(t, body)
	if r.Instructions == nil || *r.Instructions != "You are the weather desk.\n\nAnswer in one sentence.\nCite <sources> & units." {
		t.Fatalf("instructions %q", *r.Instructions)
	}
	for _, in := range r.Input {
		if strings.Contains(string(in), "weather desk") {
			t.Fatal("instructions leaked into input")
		}
	}
	if !bytes.Contains(body, []byte(`"prompt_cache_key":"sess-01"`)) || !bytes.Contains(body, []byte(`"store":false`)) ||
		!bytes.Contains(body, []byte(`"include":["reasoning.encrypted_content"]`)) {
		t.Fatalf("defaults missing: %s", body)
	}
	// tool result → function_call_output with the call's id
	want := `{"type":"function_call_output","call_id":"call_unLAR8MvFNptuiZK6K6HCy5k","output":"{\"ok\":true,\"call\":\"call_unLAR8MvFNptuiZK6K6HCy5k\"}"}`
	if !bytes.Contains(body, []byte(want)) {
		t.Fatalf("no function_call_output: %s", body)
	}
	// tools: Responses function tools, strict off, parameters always present
	if len(r.Tools) != 3 || canon(t, r.Tools[2]) != `{"name":"noop","parameters":{"properties":{},"type":"object"},"strict":false,"type":"function"}` {
		t.Fatalf("tools %s", r.Tools)
	}
	if v := inputViolation(r.Input); v != "" {
		t.Fatal(v)
	}
}

func TestCompactionNeverSendsPromptCacheKey(t *testing.T) {
	b := goldenContext(t)
	gen := lower(t, b, request(b), LowerOptions{})
	cmp := lower(t, b, request(b), LowerOptions{Compaction: true})
	if bytes.Contains(cmp, []byte("prompt_cache_key")) {
		t.Fatal("compaction request carries prompt_cache_key")
	}
	if !bytes.Equal(bytes.Replace(gen, []byte(`,"prompt_cache_key":"sess-01"`), nil, 1), cmp) {
		t.Fatal("compaction request differs by more than the cache key")
	}
	long := request(b)
	long.SessionID = strings.Repeat("s", 100)
	if body := lower(t, b, long, LowerOptions{}); !bytes.Contains(body, []byte(`"prompt_cache_key":"`+provider.PromptCacheKey(long.SessionID)+`"`)) {
		t.Fatal("long session ids use the digest form")
	}
}

func TestSameEntriesSameBytes(t *testing.T) {
	// Decoding the same responses into a fresh store gives the same refs and
	// the same request bytes: nothing depends on map order or store identity.
	a, b := goldenContext(t), goldenContext(t)
	for i := 0; i < 20; i++ {
		if !bytes.Equal(lower(t, a, request(a), LowerOptions{}), lower(t, b, request(b), LowerOptions{})) {
			t.Fatal("same entries gave different bytes")
		}
	}
	for i := range a.entries {
		if a.entries[i].Content != b.entries[i].Content {
			t.Fatalf("entry %d stored under different refs", i)
		}
	}
}

// inputPrefix is a body's input array without its closing bracket.
func inputPrefix(t *testing.T, body []byte) []byte {
	t.Helper()
	in := rawMember(t, body, "input")
	return in[:len(in)-1]
}

func TestNextInputStartsWithPreviousInput(t *testing.T) {
	// Every recorded response in turn, each answered and followed by a user
	// message: each request's input starts with the previous input's bytes.
	b := newCtx(t)
	b.instructions("instructions.a", "Be brief.")
	b.user("first")
	prev := lower(t, b, request(b), LowerOptions{})
	for _, f := range payloadFiles(t) {
		b.decode(readPayload(t, f))
		b.user("next after " + f)
		next := lower(t, b, request(b), LowerOptions{})
		p := inputPrefix(t, prev)
		if !bytes.HasPrefix(inputPrefix(t, next), append(p[:len(p):len(p)], ',')) {
			t.Fatalf("after %s the input no longer starts with the previous input", f)
		}
		if v := inputViolation(parseRequest(t, next).Input); v != "" {
			t.Fatalf("after %s: %s", f, v)
		}
		prev = next
	}
}

func TestToolOrderIsKept(t *testing.T) {
	b := goldenContext(t)
	req := request(b)
	first := lower(t, b, req, LowerOptions{})
	again := lower(t, b, req, LowerOptions{})
	if !bytes.Equal(first, again) {
		t.Fatal("the same toolset in the same order gave different bytes")
	}

	// The same definitions in another order: the adapter does not sort, so
	// the bytes differ — and only inside the tools array, whose elements are
	// the same definitions, byte for byte, in the supplied order.
	reordered := req
	reordered.Tools = []provider.Tool{testTools[2], testTools[0], testTools[1]}
	other := lower(t, b, reordered, LowerOptions{})
	if bytes.Equal(first, other) {
		t.Fatal("reordered tools gave identical bytes: the adapter reorders tools")
	}
	golden(t, "request-tools-reordered.json", other)
	ta, tb := rawMember(t, first, "tools"), rawMember(t, other, "tools")
	if !bytes.Equal(bytes.Replace(first, ta, tb, 1), other) {
		t.Fatal("bytes outside the tools array differ")
	}
	var ea, eb []json.RawMessage
	if err := json.Unmarshal(ta, &ea); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(tb, &eb); err != nil {
		t.Fatal(err)
	}
	if len(ea) != 3 || len(eb) != 3 || !bytes.Equal(eb[0], ea[2]) || !bytes.Equal(eb[1], ea[0]) || !bytes.Equal(eb[2], ea[1]) {
		t.Fatalf("tool definitions are not the supplied ones in the supplied order:\n%s\n%s", ta, tb)
	}
	for i, want := range []string{"noop", "get_current_weather", "search"} {
		if str(t, members(t, eb[i])["name"]) != want {
			t.Fatalf("tool %d is not %s", i, want)
		}
	}

	dup := req
	dup.Tools = []provider.Tool{testTools[0], testTools[0]}
	if _, err := Lower(context.Background(), b.blobs, dup, LowerOptions{}); err == nil {
		t.Fatal("a tool listed twice was accepted")
	}
}

func TestOtherTextEntries(t *testing.T) {
	b := newCtx(t)
	b.instructions("instructions.a", "sys")
	for _, kind := range []string{core.EntryCatalog, core.EntrySkillActivation, core.EntrySummary} {
		b.add(core.EntryInput{Kind: kind, Content: b.put([]byte(kind+" text"), content.MediaText)}, core.SourceRuntime)
	}
	b.add(core.EntryInput{Kind: core.EntryMessage, Role: core.RoleAssistant, Content: b.put([]byte("runtime said"), content.MediaText)}, core.SourceRuntime)
	b.add(core.EntryInput{Kind: core.EntryToolResult, CallID: "call_9", Content: b.put([]byte(`{"rows":[1,2]}`), content.MediaJSON)}, core.SourceTool)
	in := parseRequest(t, lower(t, b, request(b), LowerOptions{})).Input
	want := []string{`{"content":"catalog text","role":"user"}`, `{"content":"skill_activation text","role":"user"}`,
		`{"content":"summary text","role":"user"}`, `{"content":"runtime said","role":"assistant"}`,
		`{"call_id":"call_9","output":"{\"rows\":[1,2]}","type":"function_call_output"}`}
	if len(in) != len(want) {
		t.Fatalf("input %s", in)
	}
	for i, m := range in {
		if canon(t, m) != want[i] {
			t.Fatalf("input %d: %s", i, m)
		}
	}
}

func TestOrphanedReasoningIsNotSent(t *testing.T) {
	// The generation failed at its token limit after reasoning and a
	// function call; the core keeps the reasoning but drops the call. The next
	// request must not carry the reasoning alone (the API answers 400), and
	// must keep doing so on every later turn.
	b := newCtx(t)
	b.user("plan it")
	out, err := Decode(context.Background(), b.blobs, readPayload(t, "reasoning-function-call.json"))
	if err != nil {
		t.Fatal(err)
	}
	kept := b.admit(out.Entries, true)
	if len(kept) != 1 || kept[0].Kind != core.EntryReasoning {
		t.Fatalf("kept %+v", kept)
	}
	b.user("try again")
	in := parseRequest(t, lower(t, b, request(b), LowerOptions{})).Input
	if len(in) != 2 || inputViolation(in) != "" {
		t.Fatalf("input has %d items (want the two user messages): %s", len(in), inputViolation(in))
	}

	// Reasoning that is followed by its item is sent, runs of reasoning
	// included (the whole run goes with the item after it).
	c := newCtx(t)
	c.user("q")
	c.decode(readPayload(t, "web-search-sources.json"))
	c.user("q2")
	in = parseRequest(t, lower(t, c, request(c), LowerOptions{})).Input
	if len(in) != 10 || inputViolation(in) != "" {
		t.Fatalf("%d items", len(in))
	}
	if !followedByItem([]core.Entry{c.entries[1], c.entries[1], c.entries[2]}, 0) || followedByItem([]core.Entry{c.entries[1], c.entries[1], c.entries[0]}, 0) {
		t.Fatal("followedByItem")
	}
}

func TestLowerRejectsWhatItCannotExpress(t *testing.T) {
	cases := map[string]core.EntryInput{
		"opaque no kind":   {Kind: core.EntryProviderOpaque, Content: content.ContentRef{MediaType: content.MediaJSON}},
		"foreign kind":     {Kind: core.EntryMessage, Role: core.RoleAssistant, Content: content.ContentRef{MediaType: content.MediaJSON, ProviderKind: "openai.chat.message"}},
		"foreign call":     {Kind: core.EntryToolCall, Content: content.ContentRef{MediaType: content.MediaJSON, ProviderKind: "anthropic.tool_use"}},
		"plain call":       {Kind: core.EntryToolCall, Content: content.ContentRef{MediaType: content.MediaJSON}},
		"json user msg":    {Kind: core.EntryMessage, Role: core.RoleUser, Content: content.ContentRef{MediaType: content.MediaJSON}},
		"result no id":     {Kind: core.EntryToolResult, Content: content.ContentRef{MediaType: content.MediaText}},
		"binary result":    {Kind: core.EntryToolResult, CallID: "c", Content: content.ContentRef{MediaType: "image/png"}},
		"native instructs": {Kind: core.EntryInstructions, Content: content.ContentRef{MediaType: content.MediaJSON, ProviderKind: ProviderKindItem}},
	}
	for name, in := range cases {
		b := newCtx(t)
		in.Content.Digest = b.put([]byte("{}"), content.MediaJSON).Digest
		b.add(in, core.SourceAPI)
		_, err := Lower(context.Background(), b.blobs, request(b), LowerOptions{})
		var ue *UnsupportedEntryError
		if !errors.As(err, &ue) || ue.EntryID != "e1" {
			t.Errorf("%s: want *UnsupportedEntryError for e1, got %v", name, err)
		}
	}

	b := newCtx(t)
	b.user("x")
	b.entries[0].Content.Digest = content.Sum([]byte("absent"))
	if _, err := Lower(context.Background(), b.blobs, request(b), LowerOptions{}); err == nil || !strings.Contains(err.Error(), "e1") {
		t.Fatalf("missing blob: %v", err)
	}

	c := newCtx(t)
	ref := c.put([]byte(`["not","an","item"]`), content.MediaJSON)
	ref.ProviderKind = ProviderKindItem
	c.add(core.EntryInput{Kind: core.EntryProviderOpaque, Content: ref}, core.SourceModel)
	if _, err := Lower(context.Background(), c.blobs, request(c), LowerOptions{}); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Fatalf("corrupt item: %v", err)
	}

	noModel := request(b)
	noModel.Model.Model = ""
	if _, err := Lower(context.Background(), b.blobs, noModel, LowerOptions{}); err == nil {
		t.Fatal("no model accepted")
	}
}
