package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

var update = flag.Bool("update", false, "rewrite golden request bytes in testdata/")

var testTools = []provider.Tool{
	{Name: "weather", Description: "Weather for a location.", Parameters: json.RawMessage(`{
		"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}`)},
	{Name: "search", Description: "Search the web <fast> & cheap.", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)},
	{Name: "noop"},
}

func request(b *ctxBuilder) provider.Request {
	return provider.Request{
		SessionID: "sess-01",
		Model:     core.ModelSelection{ProviderID: "deepseek", APIKind: APIKind, Model: "deepseek-reasoner"},
		Entries:   b.entries,
		Tools:     testTools,
	}
}

func lower(t *testing.T, b *ctxBuilder, opts LowerOptions) []byte {
	t.Helper()
	body, err := Lower(context.Background(), b.blobs, request(b), opts)
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

// goldenContext is a two-turn tool loop with reasoning: instructions, a user
// question, a reasoning + tool call generation, its result, a final answer.
func goldenContext(t *testing.T) *ctxBuilder {
	b := newCtx(t)
	b.instructions("instructions.a", "You are the weather desk.")
	b.instructions("instructions.b", "Answer in one sentence.\nCite <sources> & units.")
	b.user("What's the weather in San Francisco?")
	b.decode(readPayload(t, "deepseek-reasoner-tool-call.json"))
	b.decode(readPayload(t, "cached-tokens.json"))
	b.user("Thanks — and in Detroit?")
	return b
}

func TestGoldenRequest(t *testing.T) {
	b := goldenContext(t)
	golden(t, "request-tool-loop.json", lower(t, b, LowerOptions{}))
	golden(t, "request-tool-loop-reasoning.json", lower(t, b, LowerOptions{ReasoningField: "reasoning_content"}))
}

func TestGoldenRequestMinimal(t *testing.T) {
	b := newCtx(t)
	b.user("hi")
	req := provider.Request{Model: core.ModelSelection{Model: "gpt-4o-mini"}, Entries: b.entries}
	body, err := Lower(context.Background(), b.blobs, req, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No instructions, no tools, no session: only what was given.
	if want := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`; string(body) != want {
		t.Fatalf("got %s", body)
	}
}

// messagesPrefix is the body up to and including its last message, which is
// what the next turn's body must start with.
func messagesPrefix(t *testing.T, b *ctxBuilder, opts LowerOptions) []byte {
	t.Helper()
	msgs, err := lowerMessages(context.Background(), b.blobs, b.entries, opts)
	if err != nil {
		t.Fatal(err)
	}
	var p bytes.Buffer
	p.WriteString(`{"model":"deepseek-reasoner","messages":[`)
	p.Write(bytes.Join(msgs, []byte(",")))
	return p.Bytes()
}

func TestSpec_NextRequestStartsWithPreviousMessages(t *testing.T) {
	for _, opts := range []LowerOptions{{}, {ReasoningField: "reasoning_content"}} {
		b := newCtx(t)
		b.instructions("instructions.a", "Be brief.")
		b.user("first")
		prev := lower(t, b, opts)
		prefix := messagesPrefix(t, b, opts)
		if !bytes.HasPrefix(prev, prefix) {
			t.Fatalf("body does not start with its messages:\n%s\n%s", prev, prefix)
		}
		for _, f := range payloadFiles(t) {
			b.decode(readPayload(t, filepath.Base(f)))
			b.user("next after " + filepath.Base(f))
			next := lower(t, b, opts)
			if !bytes.HasPrefix(next, append(prefix, ',')) {
				t.Fatalf("after %s the request no longer starts with the previous messages", filepath.Base(f))
			}
			prefix = messagesPrefix(t, b, opts)
		}
	}
}

func TestSameEntriesSameBytes(t *testing.T) {
	// Decoding the same responses into a fresh store gives the same refs and
	// the same request bytes: nothing depends on map order or store identity.
	a, b := goldenContext(t), goldenContext(t)
	for i := 0; i < 20; i++ {
		if !bytes.Equal(lower(t, a, LowerOptions{}), lower(t, b, LowerOptions{})) {
			t.Fatal("same entries gave different bytes")
		}
	}
	for i := range a.entries {
		if a.entries[i].Content != b.entries[i].Content {
			t.Fatalf("entry %d stored under different refs", i)
		}
	}
}

func TestFoldingIsContiguous(t *testing.T) {
	// Two generations back to back (answer, then a tool-call turn) stay two
	// assistant messages; the tool calls fold into the second one only.
	b := newCtx(t)
	b.user("q")
	b.decode(readPayload(t, "deepseek-reasoner.json"))
	b.decode(readPayload(t, "xai-reasoning-tool-call.json"))
	b.decode(readPayload(t, "groq-parallel-tool-calls.json"))
	msgs := requestMessages(t, lower(t, b, LowerOptions{ReasoningField: "reasoning_content"}))
	var roles []string
	for _, m := range msgs {
		r, _ := rawjson.String(m["role"])
		roles = append(roles, r)
	}
	if got := strings.Join(roles, ","); got != "user,assistant,assistant,tool,assistant,tool,tool" {
		t.Fatalf("roles %s", got)
	}
	if _, ok := msgs[1]["tool_calls"]; ok {
		t.Fatal("tool calls folded into the wrong assistant message")
	}
	if _, ok := msgs[4]["reasoning_content"]; ok {
		t.Fatal("reasoning of one generation attached to the next")
	}
	if _, ok := msgs[2]["reasoning_content"]; !ok {
		t.Fatal("reasoning missing from its own generation")
	}
}

func TestFoldingWithoutMessage(t *testing.T) {
	// Compaction may leave tool calls whose message was removed, or reasoning
	// alone: calls still fold into one assistant message; lone reasoning is
	// not an assistant message at all.
	b := newCtx(t)
	b.user("q")
	out, _ := b.decode(readPayload(t, "deepseek-reasoner-tool-call.json"))
	keep := b.entries[:0:0]
	for _, e := range b.entries {
		if e.ID != out[1].ID { // drop the message entry
			keep = append(keep, e)
		}
	}
	b.entries = keep
	msgs := requestMessages(t, lower(t, b, LowerOptions{}))
	if len(msgs) != 3 || string(msgs[1]["content"]) != "null" || len(msgs[1]["tool_calls"]) == 0 {
		t.Fatalf("got %v", msgs)
	}

	c := newCtx(t)
	c.user("q")
	out, _ = c.decode(readPayload(t, "deepseek-reasoner.json"))
	c.entries = c.entries[:2] // user, reasoning
	c.user("again")
	msgs = requestMessages(t, lower(t, c, LowerOptions{ReasoningField: "reasoning_content"}))
	if len(msgs) != 2 {
		t.Fatalf("lone reasoning became a message: %v", msgs)
	}
	_ = out
}

func TestOtherTextEntriesAreUserMessages(t *testing.T) {
	b := newCtx(t)
	b.instructions("instructions.a", "sys")
	for _, kind := range []string{core.EntryCatalog, core.EntrySkillActivation, core.EntrySummary} {
		b.add(core.EntryInput{Kind: kind, Content: b.put([]byte(kind+" text"), content.MediaText)}, core.SourceRuntime)
	}
	b.add(core.EntryInput{Kind: core.EntryMessage, Role: core.RoleAssistant, Content: b.put([]byte("runtime said"), content.MediaText)}, core.SourceRuntime)
	msgs := requestMessages(t, lower(t, b, LowerOptions{}))
	want := []string{`{"content":"sys","role":"system"}`, `{"content":"catalog text","role":"user"}`,
		`{"content":"skill_activation text","role":"user"}`, `{"content":"summary text","role":"user"}`,
		`{"content":"runtime said","role":"assistant"}`}
	for i, m := range msgs {
		raw, _ := json.Marshal(m)
		if canon(t, raw) != want[i] {
			t.Fatalf("message %d: %s", i, raw)
		}
	}
}

// Any text/* media type is text (e.g. a markdown file appended by ref).
func TestTextSubtypesAreText(t *testing.T) {
	b := newCtx(t)
	b.add(core.EntryInput{Kind: core.EntryMessage, Role: core.RoleUser, Content: b.put([]byte("# notes"), "text/markdown")}, core.SourceAPI)
	msgs := requestMessages(t, lower(t, b, LowerOptions{}))
	raw, _ := json.Marshal(msgs[0])
	if canon(t, raw) != `{"content":"# notes","role":"user"}` {
		t.Fatalf("markdown message lowered as %s", raw)
	}
}

func TestLowerRejectsWhatItCannotExpress(t *testing.T) {
	cases := map[string]core.EntryInput{
		"opaque":        {Kind: core.EntryProviderOpaque},
		"foreign kind":  {Kind: core.EntryMessage, Role: core.RoleAssistant, Content: content.ContentRef{MediaType: content.MediaJSON, ProviderKind: "openai.responses.message"}},
		"foreign call":  {Kind: core.EntryToolCall, Content: content.ContentRef{MediaType: content.MediaJSON, ProviderKind: "anthropic.tool_use"}},
		"json user msg": {Kind: core.EntryMessage, Role: core.RoleUser, Content: content.ContentRef{MediaType: content.MediaJSON}},
		"result no id":  {Kind: core.EntryToolResult, Content: content.ContentRef{MediaType: content.MediaText}},
	}
	for name, in := range cases {
		b := newCtx(t)
		in.Content.Digest = b.put([]byte("{}"), content.MediaJSON).Digest
		b.add(in, core.SourceAPI)
		_, err := Lower(context.Background(), b.blobs, request(b), LowerOptions{})
		var ue *UnsupportedEntryError
		if !errors.As(err, &ue) {
			t.Errorf("%s: want *UnsupportedEntryError, got %v", name, err)
		}
	}
	b := newCtx(t)
	b.user("x")
	b.entries[0].Content.Digest = content.Sum([]byte("absent"))
	if _, err := Lower(context.Background(), b.blobs, request(b), LowerOptions{}); err == nil || !strings.Contains(err.Error(), b.entries[0].ID) {
		t.Fatalf("missing blob: %v", err)
	}
}

func TestPromptCacheKey(t *testing.T) {
	if provider.PromptCacheKey("sess-01") != "sess-01" || provider.PromptCacheKey("") != "" {
		t.Fatal("short ids are used as is")
	}
	exact := strings.Repeat("a", 64)
	if provider.PromptCacheKey(exact) != exact {
		t.Fatal("64 characters fit")
	}
	rng := rand.New(rand.NewSource(1))
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		id := strings.Repeat("x", 65+rng.Intn(200)) + string(rune('a'+i%26)) + strings.Repeat("y", i)
		k := provider.PromptCacheKey(id)
		if len(k) > 64 || !strings.HasPrefix(k, "cairn-") || content.IsDigestString(k) || seen[k] {
			t.Fatalf("key %q for a %d-char id", k, len(id))
		}
		if provider.PromptCacheKey(id) != k {
			t.Fatal("not stable")
		}
		seen[k] = true
	}
	ref := content.Sum([]byte("x")).String()
	if k := provider.PromptCacheKey(ref); content.IsDigestString(k) || len(k) > 64 {
		t.Fatalf("a ref-shaped id gave %q", k)
	}
}
