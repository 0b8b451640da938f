package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

func (b *ctxBuilder) compactRequest(target int64, params string) provider.CompactRequest {
	req := provider.CompactRequest{
		SessionID:    "sess-01",
		Model:        core.ModelSelection{ProviderID: "anthropic", APIKind: APIKind, Model: "claude-sonnet-4-5"},
		Entries:      b.entries,
		Tools:        testTools,
		TargetTokens: target,
	}
	if params != "" {
		req.Params = json.RawMessage(params)
	}
	return req
}

func summaryReply(stop string, blocks ...string) reply {
	return reply{status: 200, body: scriptedMessage(9, stop, blocks...)}
}

// toolHistory is a conversation with a finished tool loop: two calls (one to
// a tool that is not among testTools any more), their results, an answer.
func toolHistory(t *testing.T) *ctxBuilder {
	b := newCtx(t)
	b.user("Tigers tonight?")
	b.decode(scriptedThinkingToolUse(1, "search", "lookup"))
	b.decode(scriptedAnswer(2))
	return b
}

func TestCompactRequestWithToolHistory(t *testing.T) {
	f := &fakeMessages{t: t, wantKey: testKey, replies: []reply{summaryReply("end_turn", `{"type":"text","text":"The user asked about the Tigers."}`)}}
	_, ep := f.start(t)
	b := toolHistory(t)
	params := `{"version":1,"maxTokens":16000,"topP":0.97,"thinking":{"type":"enabled","budgetTokens":4096},"cacheTtl":"1h",` +
		`"extra":{"metadata":{"user_id":"u-1"},"tool_choice":{"type":"auto"},"stop_sequences":["END"]}}`
	req := b.compactRequest(1500, params)
	out, err := adapterFor(ep).Compact(context.Background(), b.blobs, req)
	if err != nil || out.Failure != nil || len(out.Entries) != 1 {
		t.Fatalf("%+v %v", out, err)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	body := reqs[0]
	direct, err := LowerCompact(context.Background(), b.blobs, req)
	if err != nil || !bytes.Equal(direct, body) {
		t.Fatalf("LowerCompact differs from the body sent (%v):\n%s\n%s", err, direct, body)
	}

	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"thinking", "stop_sequences"} {
		if _, ok := top[absent]; ok {
			t.Errorf("%s sent: %s", absent, body)
		}
	}
	if string(top["tool_choice"]) != `{"type":"none"}` || bytes.Count(body, []byte(`"tool_choice"`)) != 1 {
		t.Errorf("tool_choice: %s", body)
	}
	if string(top["metadata"]) != `{"user_id":"u-1"}` || string(top["top_p"]) != "0.97" {
		t.Errorf("session parameters not kept: %s", body)
	}
	if n := countMarkers(body); n != 0 || bytes.Contains(body, []byte("cache_control")) {
		t.Errorf("%d cache markers in a compaction request", n)
	}

	r := parseReq(t, body)
	if r.Model != "claude-sonnet-4-5" || r.MaxTokens != 1500 {
		t.Errorf("model %q, max_tokens %d", r.Model, r.MaxTokens)
	}
	if len(r.System) != 1 || textOf(t, r.System[0]) != provider.SummaryInstructions(1500) || !strings.Contains(textOf(t, r.System[0]), "about 1500 tokens") {
		t.Errorf("system: %s", r.System)
	}
	var names []string
	for _, tool := range r.Tools {
		var v struct{ Name string }
		json.Unmarshal(tool, &v)
		names = append(names, v.Name)
	}
	if strings.Join(names, ",") != "weather,search,noop,lookup" || string(r.Tools[3]) != `{"name":"lookup","input_schema":{"type":"object"}}` {
		t.Errorf("tools %v: %s", names, r.Tools)
	}

	// The conversation is sent as Generate sends it, byte for byte (Generate's
	// cache markers aside), then the request for the summary.
	gen := parseReq(t, stripMarkers(b.lower()))
	if len(r.Messages) != len(gen.Messages)+1 {
		t.Fatalf("%d messages, generation has %d", len(r.Messages), len(gen.Messages))
	}
	for i, m := range gen.Messages {
		got := r.Messages[i]
		if got.Role != m.Role || len(got.Content) != len(m.Content) {
			t.Fatalf("message %d: %s %d blocks, want %s %d", i, got.Role, len(got.Content), m.Role, len(m.Content))
		}
		for j := range m.Content {
			if !bytes.Equal(got.Content[j], m.Content[j]) {
				t.Errorf("message %d block %d:\n%s\nwant\n%s", i, j, got.Content[j], m.Content[j])
			}
		}
	}
	last := r.Messages[len(r.Messages)-1]
	if last.Role != roleUser || len(last.Content) != 1 || textOf(t, last.Content[0]) != provider.SummaryPrompt(1500) || !strings.Contains(provider.SummaryPrompt(1500), "1500") {
		t.Errorf("last message: %s %s", last.Role, last.Content)
	}

	// Every tool_use is answered in the next message, and every tool_result
	// answers the message before it.
	calls := 0
	for i, m := range r.Messages {
		for _, c := range m.Content {
			var v struct{ Type, ID, ToolUseID string }
			json.Unmarshal(c, &v)
			var v2 struct {
				ToolUseID string `json:"tool_use_id"`
			}
			json.Unmarshal(c, &v2)
			switch v.Type {
			case typeToolUse:
				calls++
				if i+1 >= len(r.Messages) || !hasBlock(t, r.Messages[i+1].Content, typeToolResult, v.ID) {
					t.Errorf("tool_use %s is not answered in the next message", v.ID)
				}
			case typeToolResult:
				if i == 0 || !hasBlock(t, r.Messages[i-1].Content, typeToolUse, v2.ToolUseID) {
					t.Errorf("tool_result %s answers no tool_use of the previous message", v2.ToolUseID)
				}
			}
		}
	}
	if calls != 2 {
		t.Errorf("%d tool_use blocks sent, want 2", calls)
	}
}

func TestCompactRequestWithoutToolHistory(t *testing.T) {
	b := newCtx(t)
	b.user("What is a cairn?")
	b.decode(scriptedAnswer(1))
	body, err := LowerCompact(context.Background(), b.blobs, b.compactRequest(0, `{"version":1,"extra":{"tool_choice":{"type":"auto"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(body, []byte(`"tools"`)) || bytes.Contains(body, []byte(`"tool_choice"`)) {
		t.Errorf("tools without tool history: %s", body)
	}
	r := parseReq(t, body)
	if r.MaxTokens != provider.DefaultSummaryTokens || provider.DefaultSummaryTokens != 2048 {
		t.Errorf("max_tokens %d, want the default 2048", r.MaxTokens)
	}
	if len(r.System) != 1 || !strings.Contains(textOf(t, r.System[0]), "about 2048 tokens") {
		t.Errorf("system: %s", r.System)
	}
	if len(r.Messages) != 3 || r.Messages[2].Role != roleUser || textOf(t, r.Messages[2].Content[0]) != provider.SummaryPrompt(2048) {
		t.Errorf("messages: %+v", r.Messages)
	}
}

func TestCompactDecodesSummary(t *testing.T) {
	blocks := []string{`{"type":"text","text":"## Summary\nThe user asked about the Tigers; "}`, `{"type":"text","text":"the game is at 7:10 pm (café \u00e9).","citations":null}`}
	f := &fakeMessages{t: t, wantKey: testKey, replies: []reply{summaryReply("end_turn", blocks...)}}
	_, ep := f.start(t)
	b := toolHistory(t)
	out, err := adapterFor(ep).Compact(context.Background(), b.blobs, b.compactRequest(1500, ""))
	if err != nil || out.Failure != nil || len(out.Entries) != 1 {
		t.Fatalf("%+v %v", out, err)
	}
	const want = "## Summary\nThe user asked about the Tigers; the game is at 7:10 pm (café é)."
	e := out.Entries[0]
	if e.Kind != core.EntrySummary || e.Origin != "compaction" || e.Content.MediaType != content.MediaText || e.Content.ProviderKind != "" {
		t.Fatalf("entry %+v", e)
	}
	if got := string(b.get(e.Content)); got != want {
		t.Fatalf("summary %q, want %q", got, want)
	}
	if e.TokenEstimate != provider.Estimate([]byte(want)) || e.Preview != provider.Preview(want) {
		t.Errorf("estimate %+v preview %q", e.TokenEstimate, e.Preview)
	}
	if e.ProvenanceRef == nil || e.ProvenanceRef.ProviderKind != ProviderKindText || e.ProvenanceRef.MediaType != content.MediaJSON {
		t.Fatalf("provenance %+v", e.ProvenanceRef)
	}
	native := b.get(*e.ProvenanceRef)
	if string(native) != "["+blocks[0]+","+blocks[1]+"]" {
		t.Errorf("native blocks %s", native)
	}
	if text, err := ProjectText(native); err != nil || text != want {
		t.Errorf("projected %q %v", text, err)
	}
	if out.Usage.InputTokens != 109 || out.Usage.OutputTokens != 19 {
		t.Errorf("usage %+v", out.Usage)
	}

	// The summary is model input: it lowers as user text.
	s := newCtx(t)
	s.blobs = b.blobs
	s.add(e, core.SourceRuntime)
	s.user("Go on.")
	r := parseReq(t, s.lower())
	if len(r.Messages) != 1 || textOf(t, r.Messages[0].Content[0]) != want {
		t.Errorf("summary lowered as %+v", r.Messages)
	}
}

func TestCompactUnusableAnswerIsFailure(t *testing.T) {
	cases := []struct {
		name, stop string
		blocks     []string
		msg        string
	}{
		{"max_tokens", "max_tokens", []string{`{"type":"text","text":"The user asked about the Tig"}`}, "output limit (1500 tokens)"},
		{"refusal", "refusal", []string{`{"type":"text","text":"I can't"}`}, "refused"},
		{"empty text", "end_turn", []string{`{"type":"text","text":" \n"}`}, "empty summary"},
		{"no content", "end_turn", nil, "empty summary"},
		{"tool call", "tool_use", []string{`{"type":"text","text":"Let me look."}`, `{"type":"tool_use","id":"toolu_x","name":"search","input":{}}`}, "called a tool"},
		{"context window", "model_context_window_exceeded", []string{`{"type":"text","text":"Sum"}`}, "context window"},
		{"pause", "pause_turn", []string{`{"type":"text","text":"Sum"}`}, `stop_reason "pause_turn"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeMessages{t: t, wantKey: testKey, replies: []reply{summaryReply(c.stop, c.blocks...)}}
			_, ep := f.start(t)
			b := toolHistory(t)
			out, err := adapterFor(ep).Compact(context.Background(), b.blobs, b.compactRequest(1500, ""))
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if out.Failure == nil || out.Failure.Kind != "compaction_failed" || !strings.Contains(out.Failure.Message, c.msg) || len(out.Entries) != 0 {
				t.Fatalf("%+v %+v", out, out.Failure)
			}
			if out.Failure.Ref == nil || !strings.Contains(string(b.get(*out.Failure.Ref)), out.Failure.Message) {
				t.Errorf("failure text %+v", out.Failure.Ref)
			}
			if out.Usage.OutputTokens != 19 {
				t.Errorf("usage %+v", out.Usage)
			}
		})
	}
}

func TestCompactHTTPErrors(t *testing.T) {
	cases := []struct {
		name       string
		rep        reply
		retryable  bool
		retryAfter time.Duration
		msg        string
	}{
		{"429", reply{429, map[string]string{"Retry-After": "7"}, []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)}, true, 7 * time.Second, "rate_limit_error: slow down"},
		{"400", reply{400, nil, []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"messages: tool_use without tools"}}`)}, false, 0, "invalid_request_error: messages: tool_use without tools"},
		{"200 not a message", reply{200, nil, []byte(`{"type":"error","error":{"type":"api_error","message":"x"}}`)}, false, 0, "anthropic: decode response"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeMessages{t: t, wantKey: testKey, replies: []reply{c.rep}}
			_, ep := f.start(t)
			b := toolHistory(t)
			out, err := adapterFor(ep).Compact(context.Background(), b.blobs, b.compactRequest(0, ""))
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Status != c.rep.status || pe.Retryable != c.retryable || pe.RetryAfter != c.retryAfter || !strings.HasPrefix(pe.Message, c.msg) {
				t.Fatalf("got %#v (%v)", pe, err)
			}
			if out.Failure != nil || len(out.Entries) != 0 {
				t.Fatalf("output with an error: %+v", out)
			}
		})
	}
}

func TestCompactRefusesBadRequests(t *testing.T) {
	f := &fakeMessages{t: t, wantKey: testKey}
	_, ep := f.start(t)
	a := adapterFor(ep)
	b := toolHistory(t)

	empty := b.compactRequest(0, "")
	empty.Entries = nil
	out, err := a.Compact(context.Background(), b.blobs, empty)
	if err != nil || out.Failure == nil || out.Failure.Kind != provider.FailureCompaction {
		t.Fatalf("no entries: %+v %v", out, err)
	}
	wrong := b.compactRequest(0, "")
	wrong.Model.APIKind = core.APIChatCompletions
	if _, err := a.Compact(context.Background(), b.blobs, wrong); err == nil || !strings.Contains(err.Error(), "API kind") {
		t.Fatalf("wrong API kind: %v", err)
	}
	var pe *ParamsError
	if _, err := a.Compact(context.Background(), b.blobs, b.compactRequest(0, `{"version":2}`)); !errors.As(err, &pe) {
		t.Fatalf("bad params: %v", err)
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func textOf(t *testing.T, raw []byte) string {
	t.Helper()
	var v struct{ Type, Text string }
	if err := json.Unmarshal(raw, &v); err != nil || v.Type != typeText {
		t.Fatalf("not a text block: %s", raw)
	}
	return v.Text
}

func hasBlock(t *testing.T, blocks []json.RawMessage, typ, id string) bool {
	t.Helper()
	for _, raw := range blocks {
		var v struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			ToolUseID string `json:"tool_use_id"`
		}
		json.Unmarshal(raw, &v)
		if v.Type == typ && (v.ID == id || v.ToolUseID == id) {
			return true
		}
	}
	return false
}
