package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/httpx"
)

func TestAdapterToolLoop(t *testing.T) {
	f := &fakeMessages{t: t, wantKey: testKey, replies: []reply{
		{status: 200, body: readPayload(t, "thinking-tool-use.json")},
		{status: 200, body: readPayload(t, "prompt-cache-usage.json")},
	}}
	_, ep := f.start(t)
	ep.Headers = map[string]string{"anthropic-beta": "token-efficient-tools-2025-02-19", "anthropic-version": "1999-01-01"}
	a := adapterFor(ep)

	b := newCtx(t)
	b.instructions("instructions.a", "Be brief.")
	b.user("Tigers tonight?")
	out, err := a.Generate(context.Background(), b.blobs, b.request())
	if err != nil {
		t.Fatal(err)
	}
	if out.Finish != "tool_use" || len(out.ToolCalls) != 1 || out.ToolCalls[0].CallID != "toolu_01BNmk7Tacn3t45rgeZimYZV" || out.ResponseID != "msg_01447uK5PArU2QWTv63iMsdx" || out.Failure != nil {
		t.Fatalf("turn 1: %+v", out)
	}
	b.admit(out)
	b.toolResult("toolu_01BNmk7Tacn3t45rgeZimYZV", "search", "7:10 pm at Comerica Park")

	out, err = a.Generate(context.Background(), b.blobs, b.request())
	if err != nil {
		t.Fatal(err)
	}
	if out.Finish != "end_turn" || out.Usage.CachedInputTokens != 1111 || out.Usage.CacheWriteTokens != 418 || out.Usage.InputTokens != 3+1111+418 || out.Usage.OutputTokens != 33 {
		t.Fatalf("turn 2: %+v", out)
	}

	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	// Turn 2 starts with turn 1 through its last message (markers stripped).
	first, second := stripMarkers(reqs[0]), stripMarkers(reqs[1])
	if !bytes.HasPrefix(second, first[:len(first)-2]) {
		t.Fatalf("turn 2 does not extend turn 1:\n%s\n%s", first, second)
	}
	h := f.headers[0]
	if h.Get("x-api-key") != testKey || h.Get("anthropic-version") != AnthropicVersion || h.Get("anthropic-beta") != "token-efficient-tools-2025-02-19" || h.Get("Accept") != "application/json" {
		t.Fatalf("headers %v", h)
	}
}

func TestAdapterNoKeyNoAPIKeyHeader(t *testing.T) {
	f := &fakeMessages{t: t, replies: []reply{{status: 200, body: readPayload(t, "thinking-text.json")}}}
	_, ep := f.start(t)
	b := newCtx(t)
	b.user("q")
	if _, err := adapterFor(ep).Generate(context.Background(), b.blobs, b.request()); err != nil {
		t.Fatal(err)
	}
}

func TestAdapterRefusesProviderThatDoesNotAdmitTheKind(t *testing.T) {
	f := &fakeMessages{t: t, wantKey: testKey}
	_, ep := f.start(t)
	ep.APIKinds = []string{core.APIChatCompletions}
	b := newCtx(t)
	b.user("q")
	_, err := adapterFor(ep).Generate(context.Background(), b.blobs, b.request())
	if !errors.Is(err, endpoint.ErrAPIKindNotAdmitted) {
		t.Fatalf("got %v", err)
	}
	if len(f.requests()) != 0 {
		t.Fatal("a request was sent to a provider that does not speak Messages")
	}

	// Through the default resolver: a custom record without apiKinds is a
	// Chat Completions provider.
	p := t.TempDir() + "/endpoints.json"
	writeFile(t, p, `{"providers": {"local": {"baseUrl": "`+ep.BaseURL+`"}}}`)
	req := b.request()
	req.Model.ProviderID = "local"
	if _, err := New(endpoint.New(p, func(string) string { return "" }), nil).Generate(context.Background(), b.blobs, req); !errors.Is(err, endpoint.ErrAPIKindNotAdmitted) {
		t.Fatalf("got %v", err)
	}
}

func TestAdapterUsesTheBuiltinAnthropicProvider(t *testing.T) {
	f := &fakeMessages{t: t, wantKey: testKey, replies: []reply{{status: 200, body: readPayload(t, "redacted-thinking.json")}}}
	srv, _ := f.start(t)
	vars := map[string]string{endpoint.AnthropicKeyEnv: testKey, endpoint.AnthropicBaseURLEnv: srv.URL}
	a := New(endpoint.New("", func(k string) string { return vars[k] }), nil)
	b := newCtx(t)
	b.user("q")
	out, err := a.Generate(context.Background(), b.blobs, b.request())
	if err != nil || len(out.Entries) != 2 {
		t.Fatalf("%+v %v", out, err)
	}
}

func TestAdapterPauseTurnIsContinued(t *testing.T) {
	paused := scriptedMessage(1, "pause_turn",
		`{"type":"text","text":"Searching."}`,
		`{"type":"server_tool_use","id":"srvtoolu_p","name":"web_search","input":{"query":"tigers"}}`)
	resumed := scriptedMessage(2, "end_turn",
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_p","content":[]}`,
		`{"type":"text","text":"Nothing found."}`)
	f := &fakeMessages{t: t, wantKey: testKey, replies: []reply{{status: 200, body: paused}, {status: 200, body: resumed}}}
	_, ep := f.start(t)
	b := newCtx(t)
	b.user("q")
	out, err := adapterFor(ep).Generate(context.Background(), b.blobs, b.request())
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	// The continuation re-sends the paused content as the trailing assistant message.
	r := parseReq(t, reqs[1])
	if len(r.Messages) != 2 || r.Messages[1].Role != roleAssistant || len(r.Messages[1].Content) != 2 ||
		string(r.Messages[1].Content[0]) != `{"type":"text","text":"Searching."}` ||
		string(withoutMarker(r.Messages[1].Content[1])) != `{"type":"server_tool_use","id":"srvtoolu_p","name":"web_search","input":{"query":"tigers"}}` {
		t.Fatalf("continuation: %s", reqs[1])
	}
	if !bytes.HasPrefix(stripMarkers(reqs[1]), stripMarkers(reqs[0])[:len(stripMarkers(reqs[0]))-2]) {
		t.Fatal("continuation does not extend the first request")
	}
	// One output: all blocks in order, usage summed, the last id and stop.
	var kinds []string
	for _, e := range out.Entries {
		kinds = append(kinds, e.Kind)
	}
	if strings.Join(kinds, ",") != "message,provider_opaque,provider_opaque,message" || out.Finish != "end_turn" || out.ResponseID != "msg_scripted_02" ||
		out.Usage.InputTokens != 101+102 || out.Failure != nil {
		t.Fatalf("%v %+v", kinds, out)
	}
	// The next request folds them into one assistant message, in order.
	b.admit(out)
	b.user("thanks")
	next := parseReq(t, b.lower())
	if len(next.Messages) != 3 || len(next.Messages[1].Content) != 4 || blockType(t, next.Messages[1].Content[2]) != "web_search_tool_result" {
		t.Fatalf("%s", b.lower())
	}
}

func TestAdapterPauseTurnIsBounded(t *testing.T) {
	f := &fakeMessages{t: t, wantKey: testKey, respond: func(n int, _ []byte) reply {
		return reply{status: 200, body: scriptedMessage(n, "pause_turn",
			`{"type":"server_tool_use","id":"srvtoolu_`+itoa(n)+`","name":"web_search","input":{}}`,
			`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_`+itoa(n)+`","content":[]}`)}
	}}
	_, ep := f.start(t)
	b := newCtx(t)
	b.user("q")
	out, err := adapterFor(ep).Generate(context.Background(), b.blobs, b.request())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.requests()); n != 1+MaxPauseContinuations {
		t.Fatalf("%d requests, want %d", n, 1+MaxPauseContinuations)
	}
	if out.Failure == nil || out.Failure.Kind != FailurePauseLimit || out.Failure.Ref == nil || len(out.Entries) != 2*(1+MaxPauseContinuations) {
		t.Fatalf("%+v (%d entries)", out.Failure, len(out.Entries))
	}
}

func TestAdapterRefusalFailsTheTurn(t *testing.T) {
	for _, name := range []string{"refusal.json", "refusal-partial-text.json"} {
		f := &fakeMessages{t: t, wantKey: testKey, replies: []reply{{status: 200, body: readPayload(t, name)}}}
		_, ep := f.start(t)
		b := newCtx(t)
		b.user("q")
		out, err := adapterFor(ep).Generate(context.Background(), b.blobs, b.request())
		if err != nil {
			t.Fatal(err)
		}
		if out.Failure == nil || out.Failure.Kind != FailureRefusal || len(out.Entries) != 0 || out.Finish != "refusal" {
			t.Fatalf("%s: %+v", name, out)
		}
		if name == "refusal.json" && !strings.Contains(out.Failure.Message, "violative cyber content") {
			t.Fatalf("message %q", out.Failure.Message)
		}
		text := b.get(*out.Failure.Ref)
		if !strings.Contains(string(text), "Category: cyber") && name == "refusal.json" {
			t.Fatalf("failure text %q", text)
		}
	}
}

func TestAdapterMaxTokensFailsWithTheLimitSent(t *testing.T) {
	body := bytes.Replace(readPayload(t, "parallel-tool-use.json"), []byte(`"stop_reason": "tool_use"`), []byte(`"stop_reason": "max_tokens"`), 1)
	f := &fakeMessages{t: t, wantKey: testKey, replies: []reply{{status: 200, body: body}}}
	_, ep := f.start(t)
	b := newCtx(t)
	b.user("q")
	req := b.request()
	req.Params = json.RawMessage(`{"maxTokens":200,"version":1}`)
	out, err := adapterFor(ep).Generate(context.Background(), b.blobs, req)
	if err != nil {
		t.Fatal(err)
	}
	if out.Failure == nil || out.Failure.Kind != FailureMaxTokens || !strings.Contains(out.Failure.Message, "200") || len(out.ToolCalls) != 0 || len(out.Entries) != 1 {
		t.Fatalf("%+v", out)
	}
	if !bytes.Contains(f.requests()[0], []byte(`"max_tokens":200,`)) {
		t.Fatal("max_tokens not sent")
	}
}

func TestAdapterErrorClassification(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	errBody := func(typ, msg string) []byte {
		return []byte(`{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_011"}`)
	}
	cases := []struct {
		name       string
		rep        reply
		retryable  bool
		retryAfter time.Duration
		msg        string
	}{
		{"429 seconds", reply{429, map[string]string{"Retry-After": "7"}, errBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")},
			true, 7 * time.Second, "rate_limit_error: Number of request tokens has exceeded your per-minute rate limit"},
		{"429 ms", reply{429, map[string]string{"retry-after-ms": "1500", "Retry-After": "2"}, errBody("rate_limit_error", "slow down")},
			true, 1500 * time.Millisecond, "rate_limit_error: slow down"},
		{"429 date", reply{429, map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, errBody("rate_limit_error", "later")},
			true, 90 * time.Second, "rate_limit_error: later"},
		{"529 overloaded", reply{529, map[string]string{"Retry-After": "3"}, errBody("overloaded_error", "Overloaded")}, true, 3 * time.Second, "overloaded_error: Overloaded"},
		{"529 empty", reply{529, nil, nil}, true, 0, "Overloaded"},
		{"500", reply{500, nil, errBody("api_error", "Internal server error")}, true, 0, "api_error: Internal server error"},
		{"500 should not retry", reply{500, map[string]string{"x-should-retry": "false"}, errBody("api_error", "do not")}, false, 0, "api_error: do not"},
		{"400 should retry", reply{400, map[string]string{"x-should-retry": "true"}, errBody("invalid_request_error", "transient")}, true, 0, "invalid_request_error: transient"},
		{"503 proxy text", reply{503, nil, []byte(`upstream connect error`)}, true, 0, "upstream connect error"},
		{"408", reply{408, nil, []byte(`{"message":"timeout"}`)}, true, 0, "timeout"},
		{"409", reply{409, nil, []byte(`{"error":"conflict"}`)}, true, 0, "conflict"},
		{"400", reply{400, nil, errBody("invalid_request_error", "messages.1.content.0.thinking.signature: Field required")},
			false, 0, "invalid_request_error: messages.1.content.0.thinking.signature: Field required"},
		{"413", reply{413, nil, errBody("request_too_large", "Request exceeds the maximum allowed number of bytes.")}, false, 0, "request_too_large: Request exceeds the maximum allowed number of bytes."},
		{"echoed key", reply{403, nil, errBody("permission_error", "key "+testKey+" may not use this model")}, false, 0, "permission_error: key [redacted] may not use this model"},
		{"200 not a message", reply{200, nil, errBody("api_error", "upstream failed")}, false, 0, `anthropic: decode response: response type "error", want "message"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeMessages{t: t, wantKey: testKey, replies: []reply{c.rep}}
			_, ep := f.start(t)
			a := adapterFor(ep)
			a.now = func() time.Time { return now }
			b := newCtx(t)
			b.user("q")
			_, err := a.Generate(context.Background(), b.blobs, b.request())
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("want *provider.Error, got %v", err)
			}
			if pe.Status != c.rep.status || pe.Retryable != c.retryable || pe.RetryAfter != c.retryAfter || pe.Message != c.msg {
				t.Fatalf("got %+v", pe)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Fatal("error contains the key")
			}
		})
	}

	t.Run("wrong key is redacted", func(t *testing.T) {
		f := &fakeMessages{t: t, wantKey: "sk-ant-other-0000000000"}
		srv, _ := f.start(t)
		_, err := adapterFor(endpoint.Endpoint{BaseURL: srv.URL, APIKey: testKey}).Generate(context.Background(), newCtxWithUser(t).blobs, newCtxWithUser(t).request())
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Status != 401 || pe.Retryable || strings.Contains(err.Error(), testKey) || !strings.Contains(pe.Message, "[redacted]") {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("long message truncated", func(t *testing.T) {
		long := strings.Repeat("é", 2000)
		f := &fakeMessages{t: t, wantKey: testKey, replies: []reply{{400, nil, errBody("invalid_request_error", long)}}}
		_, ep := f.start(t)
		b := newCtxWithUser(t)
		_, err := adapterFor(ep).Generate(context.Background(), b.blobs, b.request())
		var pe *provider.Error
		if !errors.As(err, &pe) || len(pe.Message) > httpx.MaxMessageBytes+len("…") || !strings.HasSuffix(pe.Message, "…") {
			t.Fatalf("got %d bytes: %v", len(pe.Message), err)
		}
	})
}

func newCtxWithUser(t *testing.T) *ctxBuilder {
	b := newCtx(t)
	b.user("q")
	return b
}

func TestAdapterConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	b := newCtxWithUser(t)
	_, err = adapterFor(endpoint.Endpoint{BaseURL: "http://" + addr, APIKey: testKey}).Generate(context.Background(), b.blobs, b.request())
	var pe *provider.Error
	if !errors.As(err, &pe) || !pe.Retryable || pe.Status != 0 {
		t.Fatalf("want retryable transport error, got %v", err)
	}
	if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), addr+"/v1") {
		t.Fatalf("transport error repeats secrets or the URL: %v", err)
	}
}

func TestAdapterTimeoutAndCancel(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(block); srv.Close() })
	ep := endpoint.Endpoint{BaseURL: srv.URL}
	b := newCtxWithUser(t)

	a := New(endpoint.Static{"anthropic": ep}, &http.Client{Timeout: 50 * time.Millisecond})
	_, err := a.Generate(context.Background(), b.blobs, b.request())
	var pe *provider.Error
	if !errors.As(err, &pe) || !pe.Retryable {
		t.Fatalf("client timeout: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = adapterFor(ep).Generate(ctx, b.blobs, b.request())
	if !errors.Is(err, context.Canceled) || errors.As(err, &pe) {
		t.Fatalf("cancel: %v", err)
	}
}

func TestAdapterTerminalTransportErrors(t *testing.T) {
	b := newCtxWithUser(t)
	a := New(endpoint.Static{"anthropic": {BaseURL: "https://example.invalid"}}, &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, notRetryable{}
	})})
	_, err := a.Generate(context.Background(), b.blobs, b.request())
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Retryable {
		t.Fatalf("an error that says it is not retryable: %v", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type notRetryable struct{}

func (notRetryable) Error() string   { return "cassette exhausted" }
func (notRetryable) Retryable() bool { return false }

func TestAdapterRequestErrorsSendNothing(t *testing.T) {
	f := &fakeMessages{t: t, wantKey: testKey}
	_, ep := f.start(t)
	a := adapterFor(ep)
	b := newCtxWithUser(t)

	req := b.request()
	req.Model.APIKind = core.APIChatCompletions
	if _, err := a.Generate(context.Background(), b.blobs, req); err == nil || !strings.Contains(err.Error(), "API kind") {
		t.Fatalf("wrong API kind: %v", err)
	}
	req = b.request()
	req.Params = json.RawMessage(`{"version":1,"nope":1}`)
	var pe *ParamsError
	if _, err := a.Generate(context.Background(), b.blobs, req); !errors.As(err, &pe) {
		t.Fatalf("bad params: %v", err)
	}
	req = b.request()
	req.Model.ProviderID = "elsewhere"
	if _, err := a.Generate(context.Background(), b.blobs, req); !errors.Is(err, endpoint.ErrUnknownProvider) {
		t.Fatalf("unknown provider: %v", err)
	}
	if len(f.requests()) != 0 {
		t.Fatal("a request was sent")
	}
}
