package anthropic

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

// goldenContext: two instructions, a thinking tool loop answered, a cited
// answer, a web search answer, and a follow-up question. The responses are
// scripted, so the golden files hold no recorded payload bytes.
func goldenContext(t *testing.T) *ctxBuilder {
	b := newCtx(t)
	b.instructions("instructions.a", "You are the sports desk.")
	b.instructions("instructions.b", "Answer in one sentence.\nCite <sources> & times.")
	b.user("When do the Tigers play today, and do I need a coat?")
	b.decode(scriptedThinkingToolUse(1, "search", "weather"))
	b.decode(scriptedAnswer(2))
	b.user("And the schedule?")
	b.decode(scriptedWebSearch(3))
	b.user("Thanks — and tomorrow?")
	return b
}

func TestGoldenRequest(t *testing.T) {
	b := goldenContext(t)
	golden(t, "request-tool-loop.json", b.lower())

	req := b.request()
	req.Params = json.RawMessage(`{"cacheTtl":"1h","extra":{"metadata":{"user_id":"u-1"}},"maxTokens":8192,"thinking":{"budgetTokens":2048,"type":"enabled"},"version":1}`)
	body, err := Lower(context.Background(), b.blobs, req)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "request-tool-loop-params.json", body)
}

func TestGoldenRequestMinimal(t *testing.T) {
	b := newCtx(t)
	b.user("hi")
	req := provider.Request{Model: core.ModelSelection{Model: "claude-haiku-4-5"}, Entries: b.entries}
	body, err := Lower(context.Background(), b.blobs, req)
	if err != nil {
		t.Fatal(err)
	}
	// No instructions, no tools, no parameters: max_tokens is still set.
	want := `{"model":"claude-haiku-4-5","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`
	if string(body) != want {
		t.Fatalf("got %s", body)
	}
}

func TestInstructionsBecomeSystemBlocksInOrder(t *testing.T) {
	b := newCtx(t)
	b.instructions("instructions.a", "first")
	b.user("q")
	b.instructions("instructions.b", "second") // wherever it sits, it is system
	req := parseReq(t, b.lower())
	if len(req.System) != 2 || string(withoutMarker(req.System[0])) != `{"type":"text","text":"first"}` ||
		string(req.System[1]) != `{"type":"text","text":"second","cache_control":{"type":"ephemeral"}}` {
		t.Fatalf("system %s", req.System)
	}
	if len(req.Messages) != 1 {
		t.Fatalf("messages %d", len(req.Messages))
	}
}

func TestRoleAlternationMergesSameRoleEntries(t *testing.T) {
	b := newCtx(t)
	b.user("one")
	for _, kind := range []string{core.EntryCatalog, core.EntrySkillActivation, core.EntrySummary} {
		b.add(core.EntryInput{Kind: kind, Content: b.put([]byte(kind+" text"), content.MediaText)}, core.SourceRuntime)
	}
	b.add(core.EntryInput{Kind: core.EntryMessage, Role: core.RoleAssistant, Content: b.put([]byte("runtime said"), content.MediaText)}, core.SourceRuntime)
	b.decode(readPayload(t, "prompt-cache-usage.json"))
	b.user("two")
	b.user("three")
	req := parseReq(t, b.lower())
	var shape []string
	for _, m := range req.Messages {
		shape = append(shape, m.Role+":"+string(rune('0'+len(m.Content))))
	}
	if got := strings.Join(shape, " "); got != "user:4 assistant:2 user:2" {
		t.Fatalf("shape %s", got)
	}
}

func TestToolResultsComeFirstInTheirUserMessage(t *testing.T) {
	b := newCtx(t)
	b.user("q")
	out, err := Decode(context.Background(), b.blobs, readPayload(t, "parallel-tool-use.json"))
	if err != nil {
		t.Fatal(err)
	}
	b.admit(out)
	// Steering arrives before the results are in; results come in reverse.
	b.user("steer: only adults")
	for i := len(out.ToolCalls) - 1; i >= 0; i-- {
		b.toolResult(out.ToolCalls[i].CallID, out.ToolCalls[i].Name, "age 30")
	}
	req := parseReq(t, b.lower())
	um := req.Messages[2]
	for i := 0; i < 4; i++ {
		if blockType(t, um.Content[i]) != typeToolResult {
			t.Fatalf("block %d of the user message is %s", i, um.Content[i])
		}
		if !bytes.Contains(um.Content[i], []byte(out.ToolCalls[3-i].CallID)) {
			t.Fatalf("tool results reordered among themselves: %s", um.Content[i])
		}
	}
	if string(withoutMarker(um.Content[4])) != `{"type":"text","text":"steer: only adults"}` {
		t.Fatalf("steering %s", um.Content[4])
	}
}

func TestRuntimeErrorResultsAreMarkedIsError(t *testing.T) {
	b := newCtx(t)
	b.user("q")
	b.decode(readPayload(t, "thinking-tool-use-caller.json")) // answered with ok
	for _, ref := range []content.ContentRef{core.ToolUnavailableRef, core.ToolFailedRef, core.ToolCancelledRef} {
		c := newCtx(t)
		c.user("q")
		out, _ := Decode(context.Background(), c.blobs, readPayload(t, "thinking-tool-use-caller.json"))
		c.admit(out)
		if _, err := c.blobs.Put(context.Background(), constantBytes(ref)); err != nil {
			t.Fatal(err)
		}
		c.add(core.EntryInput{Kind: core.EntryToolResult, Content: ref, CallID: out.ToolCalls[0].CallID}, core.SourceRuntime)
		if !bytes.Contains(c.lower(), []byte(`,"is_error":true`)) {
			t.Fatalf("%s: no is_error", ref.Digest)
		}
	}
	if bytes.Contains(b.lower(), []byte(`is_error`)) {
		t.Fatal("an ordinary result marked as error")
	}
}

func constantBytes(ref content.ContentRef) []byte {
	for _, c := range core.ConstantBlobs() {
		if content.Sum(c) == ref.Digest {
			return c
		}
	}
	return nil
}

func TestNeverAnEmptyAssistantMessage(t *testing.T) {
	// A max_tokens stop right after thinking leaves a reasoning entry alone;
	// it is not sent as an assistant message, and the user turns around it
	// merge.
	b := newCtx(t)
	b.user("q")
	b.decode([]byte(`{"id":"m","type":"message","content":[{"type":"thinking","thinking":"hmm","signature":"sig"}],"stop_reason":"max_tokens"}`))
	b.user("again")
	req := parseReq(t, b.lower())
	if len(req.Messages) != 1 || len(req.Messages[0].Content) != 2 {
		t.Fatalf("%+v", req.Messages)
	}
	// Refusal: nothing was admitted, nothing is sent.
	c := newCtx(t)
	c.user("q")
	c.decode(readPayload(t, "refusal.json"))
	c.user("again")
	if req := parseReq(t, c.lower()); len(req.Messages) != 1 {
		t.Fatalf("%+v", req.Messages)
	}
}

func TestFileIDIsDroppedFromCitationsOnlyOnTheWire(t *testing.T) {
	b := newCtx(t)
	b.user("q")
	cited := `{"type":"text","text":"the grass is green","citations":[{"type":"char_location","cited_text":"The grass is green.","document_index":0,"document_title":"Doc","file_id":"file_011CNha8iCJcU1wXNR6q4V8w","start_char_index":0,"end_char_index":20}]}`
	_, added := b.decode([]byte(`{"id":"m","type":"message","content":[{"type":"text","text":"Per the file: "},` + cited + `],"stop_reason":"end_turn"}`))
	b.user("next")
	body := b.lower()
	if bytes.Contains(body, []byte("file_id")) || bytes.Contains(body, []byte("file_011")) {
		t.Fatalf("file_id sent: %s", body)
	}
	want := `{"type":"text","text":"the grass is green","citations":[{"type":"char_location","cited_text":"The grass is green.","document_index":0,"document_title":"Doc","start_char_index":0,"end_char_index":20}]}`
	if !bytes.Contains(body, []byte(want)) {
		t.Fatalf("citation not otherwise unchanged: %s", body)
	}
	if !bytes.Contains(b.get(added[0].Content), []byte(`"file_id":"file_011CNha8iCJcU1wXNR6q4V8w"`)) {
		t.Fatal("storage lost file_id")
	}
}

func TestToolsKeepTheirOrderAndSchemaBytes(t *testing.T) {
	b := newCtx(t)
	b.user("q")
	req := parseReq(t, b.lower())
	if len(req.Tools) != 3 {
		t.Fatalf("%d tools", len(req.Tools))
	}
	want := []string{
		`{"name":"weather","description":"Weather for a location.","input_schema":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}`,
		`{"name":"search","description":"Search the web <fast> & cheap.","input_schema":{"type":"object","properties":{"query":{"type":"string"}}}}`,
		`{"name":"noop","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}`,
	}
	for i, w := range want {
		if string(req.Tools[i]) != w {
			t.Fatalf("tool %d:\n got %s\nwant %s", i, req.Tools[i], w)
		}
	}
}

func TestSameEntriesSameBytes(t *testing.T) {
	a, b := goldenContext(t), goldenContext(t)
	for i := 0; i < 20; i++ {
		if !bytes.Equal(a.lower(), b.lower()) {
			t.Fatal("same entries gave different bytes")
		}
	}
}

func TestLowerRejectsWhatItCannotExpress(t *testing.T) {
	cases := map[string]core.EntryInput{
		"opaque without kind": {Kind: core.EntryProviderOpaque, Content: content.ContentRef{MediaType: content.MediaJSON}},
		"chat message":        {Kind: core.EntryMessage, Role: core.RoleAssistant, Content: content.ContentRef{MediaType: content.MediaJSON, ProviderKind: "openai.chat.message"}},
		"responses reasoning": {Kind: core.EntryReasoning, Content: content.ContentRef{MediaType: content.MediaJSON, ProviderKind: "openai.responses.reasoning"}},
		"kind mismatch":       {Kind: core.EntryMessage, Role: core.RoleAssistant, Content: content.ContentRef{MediaType: content.MediaJSON, ProviderKind: ProviderKindToolUse}},
		"json user msg":       {Kind: core.EntryMessage, Role: core.RoleUser, Content: content.ContentRef{MediaType: content.MediaJSON}},
		"result no id":        {Kind: core.EntryToolResult, Content: content.ContentRef{MediaType: content.MediaText}},
		"image result":        {Kind: core.EntryToolResult, CallID: "c", Content: content.ContentRef{MediaType: "image/png"}},
	}
	for name, in := range cases {
		b := newCtx(t)
		b.user("q")
		in.Content.Digest = b.put([]byte(`{"type":"text","text":"x"}`), content.MediaJSON).Digest
		b.add(in, core.SourceAPI)
		_, err := Lower(context.Background(), b.blobs, b.request())
		var ue *UnsupportedEntryError
		if !errors.As(err, &ue) || ue.EntryID != "e2" {
			t.Errorf("%s: want *UnsupportedEntryError for e2, got %v", name, err)
		}
	}

	// A stored blob whose block type does not match its provider kind.
	b := newCtx(t)
	b.user("q")
	ref := b.put([]byte(`{"type":"text","text":"not thinking"}`), content.MediaJSON)
	ref.ProviderKind = ProviderKindThinking
	b.add(core.EntryInput{Kind: core.EntryReasoning, Role: core.RoleAssistant, Content: ref}, core.SourceModel)
	if _, err := Lower(context.Background(), b.blobs, b.request()); err == nil || !strings.Contains(err.Error(), "e2") {
		t.Fatalf("mismatched stored block: %v", err)
	}

	// A missing blob names its entry.
	b = newCtx(t)
	b.user("x")
	b.entries[0].Content.Digest = content.Sum([]byte("absent"))
	if _, err := Lower(context.Background(), b.blobs, b.request()); err == nil || !strings.Contains(err.Error(), "e1") {
		t.Fatalf("missing blob: %v", err)
	}

	// Nothing to send, no model, bad parameters.
	b = newCtx(t)
	b.instructions("instructions.a", "only this")
	if _, err := Lower(context.Background(), b.blobs, b.request()); err == nil || !strings.Contains(err.Error(), "no messages") {
		t.Fatalf("no messages: %v", err)
	}
	b.user("q")
	req := b.request()
	req.Model.Model = ""
	if _, err := Lower(context.Background(), b.blobs, req); err == nil {
		t.Fatal("no model accepted")
	}
	req = b.request()
	req.Params = json.RawMessage(`{"version":1,"temperature":7}`)
	var pe *ParamsError
	if _, err := Lower(context.Background(), b.blobs, req); !errors.As(err, &pe) {
		t.Fatalf("bad params: %v", err)
	}
}

// A request goes in parts: a large block's kept bytes are sent as they
// are, not copied into a body the size of the whole request, and the
// parts join to the body Lower returns.
func TestLargeBlocksAreSentAsTheirKeptBytes(t *testing.T) {
	large := textBlock(strings.Repeat("a long tool result line\n", 64))
	small := textBlock("ok")
	conv := conversation{
		system: []block{textBlock("You are terse.")},
		messages: []message{
			{role: roleUser, blocks: []block{large, small}},
			{role: roleAssistant, blocks: []block{small}},
			{role: roleUser, blocks: []block{large}},
			{role: roleAssistant, blocks: []block{small}},
			{role: roleUser, blocks: []block{small}}, // the markers go on the last messages
			{role: roleAssistant, blocks: []block{small}},
			{role: roleUser, blocks: []block{small}},
		},
	}
	parts, err := conv.bodyParts("m", params{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := conv.body("m", params{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.Join(parts, nil), body) || !json.Valid(body) {
		t.Fatalf("the parts do not join to the body: %s", body)
	}
	shared := 0
	for _, p := range parts {
		if len(p) > 0 && &p[0] == &large.raw[0] {
			shared++
		}
	}
	if shared != 2 {
		t.Fatalf("%d of the parts are the large block's kept bytes; want its 2 unmarked uses", shared)
	}
}

// A message list that already alternates, holds no assistant message
// without content and puts tool results first is sent as it is, without a
// copy (a long session's list is thousands of messages); one that breaks
// any of the three is rebuilt.
func TestNormalizeKeepsAListThatNeedsNothing(t *testing.T) {
	result := block{typ: typeToolResult, raw: []byte(`{"type":"tool_result","tool_use_id":"t","content":"ok"}`)}
	thinking := block{typ: typeThinking, raw: []byte(`{"type":"thinking","thinking":"hmm","signature":"s"}`)}
	good := []message{
		{role: roleUser, blocks: []block{textBlock("q")}},
		{role: roleAssistant, blocks: []block{thinking, textBlock("a")}},
		{role: roleUser, blocks: []block{result, textBlock("and this")}},
	}
	if got := normalize(good); len(got) != len(good) || &got[0] != &good[0] {
		t.Fatalf("normalize copied a list that needed nothing")
	}
	for name, msgs := range map[string][]message{
		"same role twice":         {good[0], {role: roleUser, blocks: []block{textBlock("more")}}},
		"assistant with thinking": {good[0], {role: roleAssistant, blocks: []block{thinking}}, good[2]},
		"result after text":       {good[0], good[1], {role: roleUser, blocks: []block{textBlock("and this"), result}}},
	} {
		got := normalize(msgs)
		if &got[0] == &msgs[0] {
			t.Errorf("%s: normalize returned the list as it was", name)
		}
	}
}
