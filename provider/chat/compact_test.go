package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
)

func compactRequest(b *ctxBuilder, target int64) provider.CompactRequest {
	return provider.CompactRequest{
		SessionID:    "sess-42",
		Model:        core.ModelSelection{ProviderID: "fake", APIKind: APIKind, Model: "gpt-4o-mini"},
		Entries:      b.entries,
		Tools:        testTools,
		TargetTokens: target,
	}
}

// summaryReply is a scripted completion whose first choice is message.
func summaryReply(finish, message string) reply {
	return reply{status: 200, body: []byte(fmt.Sprintf(`{"id":"chatcmpl-sum","object":"chat.completion","model":"gpt-4o-mini",`+
		`"choices":[{"index":0,"message":%s,"logprobs":null,"finish_reason":%q}],"usage":{"prompt_tokens":120,"completion_tokens":30}}`, message, finish))}
}

// chatToolHistory is a finished tool loop: a call to get_current_weather
// (not among testTools), its result, and the answer.
func chatToolHistory(t *testing.T) *ctxBuilder {
	b := newCtx(t)
	b.user("Weather in Boston?")
	b.decode(readPayload(t, "api-reference-function-call.json"))
	b.decode(readPayload(t, "cached-tokens.json"))
	return b
}

func rawMessages(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request is not JSON: %v", err)
	}
	return req.Messages
}

func TestCompactRequestWithToolHistory(t *testing.T) {
	f := &fakeChat{t: t, wantKey: testKey, replies: []reply{summaryReply("stop", `{"role":"assistant","content":"Boston: 72F."}`)}}
	_, ep := f.start(t)
	b := chatToolHistory(t)
	req := compactRequest(b, 1500)
	out, err := adapterFor(ep).Compact(context.Background(), b.blobs, req)
	if err != nil || out.Failure != nil || len(out.Entries) != 1 {
		t.Fatalf("%+v %v", out, err)
	}
	if len(f.bodies) != 1 {
		t.Fatalf("%d requests", len(f.bodies))
	}
	body := f.bodies[0]
	direct, err := LowerCompact(context.Background(), b.blobs, req, LowerOptions{})
	if err != nil || !bytes.Equal(direct, body) {
		t.Fatalf("LowerCompact differs from the body sent (%v):\n%s\n%s", err, direct, body)
	}

	top := members(t, body)
	if string(top["model"]) != `"gpt-4o-mini"` || string(top["max_completion_tokens"]) != "1500" || string(top["tool_choice"]) != `"none"` || string(top["prompt_cache_key"]) != `"sess-42"` {
		t.Errorf("top level: %s", body)
	}
	for _, absent := range []string{"max_tokens", "stream"} {
		if _, ok := top[absent]; ok {
			t.Errorf("%s sent", absent)
		}
	}
	var tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	json.Unmarshal(top["tools"], &tools)
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Function.Name)
	}
	if strings.Join(names, ",") != "weather,search,noop,get_current_weather" || !bytes.Contains(top["tools"], []byte(`{"type":"function","function":{"name":"get_current_weather"}}]`)) {
		t.Errorf("tools %v: %s", names, top["tools"])
	}

	msgs := requestMessages(t, body)
	var sys, prompt string
	json.Unmarshal(msgs[0]["content"], &sys)
	json.Unmarshal(msgs[len(msgs)-1]["content"], &prompt)
	if string(msgs[0]["role"]) != `"system"` || sys != provider.SummaryInstructions(1500) || !strings.Contains(sys, "about 1500 tokens") {
		t.Errorf("system message: %s", msgs[0]["content"])
	}
	if string(msgs[len(msgs)-1]["role"]) != `"user"` || prompt != provider.SummaryPrompt(1500) || !strings.Contains(prompt, "1500") {
		t.Errorf("last message: %v", msgs[len(msgs)-1])
	}

	// Between them, the conversation exactly as a generation sends it.
	gen, err := Lower(context.Background(), b.blobs, provider.Request{SessionID: "sess-42", Model: req.Model, Entries: b.entries, Tools: testTools}, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, got := rawMessages(t, gen), rawMessages(t, body)
	if len(got) != len(want)+2 {
		t.Fatalf("%d messages, generation has %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i+1], want[i]) {
			t.Errorf("message %d:\n%s\nwant\n%s", i+1, got[i+1], want[i])
		}
	}

	// Every tool call is answered right after its message.
	calls := 0
	for i, m := range msgs {
		var tc []struct{ ID string }
		json.Unmarshal(m["tool_calls"], &tc)
		for j, c := range tc {
			calls++
			n := i + 1 + j
			if n >= len(msgs) || string(msgs[n]["role"]) != `"tool"` || string(msgs[n]["tool_call_id"]) != `"`+c.ID+`"` {
				t.Errorf("tool call %s is not answered", c.ID)
			}
		}
	}
	if calls != 1 {
		t.Errorf("%d tool calls sent, want 1", calls)
	}
}

func TestCompactRequestWithoutToolHistory(t *testing.T) {
	b := newCtx(t)
	b.user("What is a cairn?")
	b.decode(readPayload(t, "cached-tokens.json"))
	body, err := LowerCompact(context.Background(), b.blobs, compactRequest(b, 0), LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	top := members(t, body)
	if _, ok := top["tools"]; ok {
		t.Errorf("tools without tool history: %s", body)
	}
	if _, ok := top["tool_choice"]; ok {
		t.Errorf("tool_choice without tools: %s", body)
	}
	if string(top["max_completion_tokens"]) != "2048" || provider.DefaultSummaryTokens != 2048 {
		t.Errorf("max_completion_tokens %s, want the default 2048", top["max_completion_tokens"])
	}
	msgs := requestMessages(t, body)
	var sys string
	json.Unmarshal(msgs[0]["content"], &sys)
	if len(msgs) != 4 || !strings.Contains(sys, "about 2048 tokens") {
		t.Errorf("messages: %s", body)
	}
}

func TestCompactDecodesSummary(t *testing.T) {
	const want = "## Summary\nThe user asked for Boston's weather: 72F, sunny (café é)."
	msg := `{"role":"assistant","content":"## Summary\nThe user asked for Boston's weather: 72F, sunny (café \u00e9).","refusal":null,"annotations":[]}`
	f := &fakeChat{t: t, wantKey: testKey, replies: []reply{summaryReply("stop", msg)}}
	_, ep := f.start(t)
	b := chatToolHistory(t)
	out, err := adapterFor(ep).Compact(context.Background(), b.blobs, compactRequest(b, 1500))
	if err != nil || out.Failure != nil || len(out.Entries) != 1 {
		t.Fatalf("%+v %v", out, err)
	}
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
	if e.ProvenanceRef == nil || e.ProvenanceRef.ProviderKind != ProviderKindMessage || e.ProvenanceRef.MediaType != content.MediaJSON {
		t.Fatalf("provenance %+v", e.ProvenanceRef)
	}
	native := b.get(*e.ProvenanceRef)
	if string(native) != msg {
		t.Errorf("native message %s", native)
	}
	if text, err := ProjectText(native); err != nil || text != want {
		t.Errorf("projected %q %v", text, err)
	}
	if out.Usage.InputTokens != 120 || out.Usage.OutputTokens != 30 {
		t.Errorf("usage %+v", out.Usage)
	}

	// The summary is model input: it lowers as user text.
	s := newCtx(t)
	s.blobs = b.blobs
	s.add(e, core.SourceRuntime)
	body, err := Lower(context.Background(), s.blobs, request(s), LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	msgs := requestMessages(t, body)
	var text string
	json.Unmarshal(msgs[0]["content"], &text)
	if len(msgs) != 1 || string(msgs[0]["role"]) != `"user"` || text != want {
		t.Errorf("summary lowered as %s", body)
	}
}

func TestCompactUnusableAnswerIsFailure(t *testing.T) {
	cases := []struct {
		name, finish, message, msg string
	}{
		{"length", "length", `{"role":"assistant","content":"The user asked for Bost"}`, "output limit (1500 tokens)"},
		{"refusal", "stop", `{"role":"assistant","content":null,"refusal":"I'm sorry, I cannot help with that."}`, "refused to summarize the conversation: I'm sorry"},
		{"empty", "stop", `{"role":"assistant","content":" \n"}`, "empty summary"},
		{"null content", "stop", `{"role":"assistant","content":null}`, "empty summary"},
		{"content filter", "content_filter", `{"role":"assistant","content":"The user"}`, "content filter"},
		{"tool call", "tool_calls", `{"role":"assistant","content":"Checking.","tool_calls":[{"id":"call_x","type":"function","function":{"name":"weather","arguments":"{}"}}]}`, "called a tool"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeChat{t: t, wantKey: testKey, replies: []reply{summaryReply(c.finish, c.message)}}
			_, ep := f.start(t)
			b := chatToolHistory(t)
			out, err := adapterFor(ep).Compact(context.Background(), b.blobs, compactRequest(b, 1500))
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if out.Failure == nil || out.Failure.Kind != "compaction_failed" || !strings.Contains(out.Failure.Message, c.msg) || len(out.Entries) != 0 {
				t.Fatalf("%+v %+v", out, out.Failure)
			}
			if out.Usage.OutputTokens != 30 {
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
		{"429", reply{429, map[string]string{"Retry-After": "7"}, []byte(`{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}`)}, true, 7 * time.Second, "Rate limit reached"},
		{"400", reply{400, nil, []byte(`{"error":{"message":"Invalid parameter: tool_choice","type":"invalid_request_error"}}`)}, false, 0, "Invalid parameter: tool_choice"},
		{"200 not a completion", reply{200, nil, []byte(`{"error":{"message":"upstream failed"}}`)}, false, 0, "chat: decode response: response has no choices"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeChat{t: t, wantKey: testKey, replies: []reply{c.rep}}
			_, ep := f.start(t)
			b := chatToolHistory(t)
			out, err := adapterFor(ep).Compact(context.Background(), b.blobs, compactRequest(b, 0))
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Status != c.rep.status || pe.Retryable != c.retryable || pe.RetryAfter != c.retryAfter || pe.Message != c.msg {
				t.Fatalf("got %#v (%v)", pe, err)
			}
			if out.Failure != nil || len(out.Entries) != 0 {
				t.Fatalf("output with an error: %+v", out)
			}
		})
	}
}

func TestCompactRefusesBadRequests(t *testing.T) {
	f := &fakeChat{t: t, wantKey: testKey}
	_, ep := f.start(t)
	a := adapterFor(ep)
	b := chatToolHistory(t)

	empty := compactRequest(b, 0)
	empty.Entries = nil
	out, err := a.Compact(context.Background(), b.blobs, empty)
	if err != nil || out.Failure == nil || out.Failure.Kind != provider.FailureCompaction {
		t.Fatalf("no entries: %+v %v", out, err)
	}
	wrong := compactRequest(b, 0)
	wrong.Model.APIKind = core.APIAnthropicMessages
	if _, err := a.Compact(context.Background(), b.blobs, wrong); err == nil || !strings.Contains(err.Error(), "API kind") {
		t.Fatalf("wrong API kind: %v", err)
	}
	unknown := compactRequest(b, 0)
	unknown.Model.ProviderID = "nobody"
	if _, err := a.Compact(context.Background(), b.blobs, unknown); !errors.Is(err, endpoint.ErrUnknownProvider) {
		t.Fatalf("unknown provider: %v", err)
	}
	if len(f.bodies) != 0 {
		t.Fatalf("%d requests sent", len(f.bodies))
	}
}
