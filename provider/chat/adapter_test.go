package chat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/httpx"
)

const testKey = "sk-test-9f8e7d6c5b4a-SECRET"

// fakeChat is an in-process Chat Completions server: it checks the request
// line and credentials, records bodies and answers with recorded bytes.
type fakeChat struct {
	t       *testing.T
	wantKey string // "" means no Authorization header may be sent

	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	replies []reply
}

type reply struct {
	status  int
	headers map[string]string
	body    []byte
}

func (f *fakeChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	auth := r.Header.Get("Authorization")
	if (f.wantKey == "" && auth != "") || (f.wantKey != "" && auth != "Bearer "+f.wantKey) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error"}}`, strings.TrimPrefix(auth, "Bearer "))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		http.Error(w, "content type "+ct, http.StatusUnsupportedMediaType)
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	if len(f.replies) == 0 {
		http.Error(w, `{"error":{"message":"fake: no reply left"}}`, http.StatusTeapot)
		return
	}
	rep := f.replies[0]
	f.replies = f.replies[1:]
	for k, v := range rep.headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	w.Write(rep.body)
}

func (f *fakeChat) start(t *testing.T) (*httptest.Server, endpoint.Endpoint) {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv, endpoint.Endpoint{BaseURL: srv.URL + "/v1", APIKey: f.wantKey}
}

func adapterFor(ep endpoint.Endpoint) *Adapter {
	return New(endpoint.Static{"fake": ep}, nil)
}

func chatRequest(b *ctxBuilder) provider.Request {
	return provider.Request{
		SessionID: "sess-42",
		Model:     core.ModelSelection{ProviderID: "fake", APIKind: APIKind, Model: "gpt-4o-mini"},
		Entries:   b.entries,
		Tools:     testTools[:1],
	}
}

func TestAdapterToolLoop(t *testing.T) {
	f := &fakeChat{t: t, wantKey: testKey, replies: []reply{
		{status: 200, body: readPayload(t, "api-reference-function-call.json")},
		{status: 200, body: readPayload(t, "cached-tokens.json")},
	}}
	_, ep := f.start(t)
	ep.Headers = map[string]string{"OpenAI-Organization": "org-test"}
	a := adapterFor(ep)

	b := newCtx(t)
	b.instructions("instructions.a", "Be brief.")
	b.user("Weather in Boston?")
	out, err := a.Generate(context.Background(), b.blobs, chatRequest(b))
	if err != nil {
		t.Fatal(err)
	}
	if out.Finish != "tool_calls" || len(out.ToolCalls) != 1 || out.ToolCalls[0].CallID != "call_abc123" || out.ResponseID != "chatcmpl-abc123" {
		t.Fatalf("turn 1: %+v", out)
	}
	for _, in := range out.Entries {
		b.add(in, core.SourceModel)
	}
	b.toolResult("call_abc123", "get_current_weather", "72F, sunny")

	out, err = a.Generate(context.Background(), b.blobs, chatRequest(b))
	if err != nil {
		t.Fatal(err)
	}
	if out.Finish != "stop" || out.Usage.CachedInputTokens != 9984 {
		t.Fatalf("turn 2: %+v", out)
	}

	if len(f.bodies) != 2 {
		t.Fatalf("%d requests", len(f.bodies))
	}
	first, second := f.bodies[0], f.bodies[1]
	// Turn 2 starts with turn 1's messages, byte for byte.
	cut := bytes.LastIndex(first, []byte(`],"tools":`))
	if cut < 0 || !bytes.HasPrefix(second, append(first[:cut:cut], ',')) {
		t.Fatalf("turn 2 does not extend turn 1:\n%s\n%s", first, second)
	}
	if !bytes.Contains(second, []byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_abc123","type":"function","function":{"name":"get_current_weather","arguments":"{\n\"location\": \"Boston, MA\"\n}"}}]},{"role":"tool","tool_call_id":"call_abc123","content":"72F, sunny"}`)) {
		t.Fatalf("assistant turn not folded back as expected:\n%s", second)
	}
	if !bytes.Contains(first, []byte(`"prompt_cache_key":"sess-42"`)) {
		t.Fatal("no prompt_cache_key")
	}
	if got := f.headers[0].Get("OpenAI-Organization"); got != "org-test" {
		t.Fatalf("endpoint header not sent: %q", got)
	}
}

func TestAdapterNoKeyNoAuthorization(t *testing.T) {
	f := &fakeChat{t: t, replies: []reply{{status: 200, body: readPayload(t, "deepseek-reasoner.json")}}}
	_, ep := f.start(t)
	b := newCtx(t)
	b.user("q")
	if _, err := adapterFor(ep).Generate(context.Background(), b.blobs, chatRequest(b)); err != nil {
		t.Fatal(err)
	}
}

func TestAdapterResolvesEveryCall(t *testing.T) {
	// A rotated key is used by the next call without rebuilding the adapter.
	key := "old-key-123456"
	f := &fakeChat{t: t, wantKey: "new-key-654321", replies: []reply{{status: 200, body: readPayload(t, "cached-tokens.json")}}}
	srv, _ := f.start(t)
	a := New(resolverFunc(func(string) (endpoint.Endpoint, error) {
		return endpoint.Endpoint{BaseURL: srv.URL + "/v1", APIKey: key}, nil
	}), nil)
	b := newCtx(t)
	b.user("q")
	_, err := a.Generate(context.Background(), b.blobs, chatRequest(b))
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != 401 || pe.Retryable {
		t.Fatalf("old key: %v", err)
	}
	if strings.Contains(err.Error(), key) {
		t.Fatalf("error echoes the key: %v", err)
	}
	key = "new-key-654321"
	if _, err := a.Generate(context.Background(), b.blobs, chatRequest(b)); err != nil {
		t.Fatalf("new key: %v", err)
	}
}

type resolverFunc func(string) (endpoint.Endpoint, error)

func (r resolverFunc) Resolve(id string) (endpoint.Endpoint, error) { return r(id) }

func TestAdapterErrorClassification(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	long := strings.Repeat("é", 2000)
	cases := []struct {
		name       string
		rep        reply
		retryable  bool
		retryAfter time.Duration
		msg        string
	}{
		{"429 seconds", reply{429, map[string]string{"Retry-After": "7"}, []byte(`{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}}`)},
			true, 7 * time.Second, "Rate limit reached for gpt-4o"},
		{"429 date", reply{429, map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, []byte(`{"error":{"message":"slow down"}}`)},
			true, 90 * time.Second, "slow down"},
		{"429 quota", reply{429, nil, []byte(`{"error":{"message":"You exceeded your current quota","code":"insufficient_quota"}}`)},
			false, 0, "You exceeded your current quota"},
		{"500", reply{500, nil, []byte(`{"error":{"message":"The server had an error"}}`)}, true, 0, "The server had an error"},
		{"503 retry-after", reply{503, map[string]string{"Retry-After": "2"}, []byte(`upstream overloaded`)}, true, 2 * time.Second, "upstream overloaded"},
		{"502 empty", reply{502, nil, nil}, true, 0, "Bad Gateway"},
		{"408", reply{408, nil, []byte(`{"message":"timeout"}`)}, true, 0, "timeout"},
		{"409", reply{409, nil, []byte(`{"error":"conflict"}`)}, true, 0, "conflict"},
		{"400", reply{400, nil, []byte(`{"error":{"message":"Invalid parameter: messages[2].annotations","type":"invalid_request_error"}}`)},
			false, 0, "Invalid parameter: messages[2].annotations"},
		{"404", reply{404, nil, []byte(`{"error":{"message":"The model does not exist"}}`)}, false, 0, "The model does not exist"},
		{"echoed key", reply{400, nil, []byte(`{"error":{"message":"bad header Bearer ` + testKey + `"}}`)}, false, 0, "bad header Bearer [redacted]"},
		{"200 not a completion", reply{200, nil, []byte(`{"error":{"message":"upstream failed"}}`)}, false, 0, "chat: decode response: response has no choices"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeChat{t: t, wantKey: testKey, replies: []reply{c.rep}}
			_, ep := f.start(t)
			a := adapterFor(ep)
			a.now = func() time.Time { return now }
			b := newCtx(t)
			b.user("q")
			_, err := a.Generate(context.Background(), b.blobs, chatRequest(b))
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

	t.Run("long message truncated", func(t *testing.T) {
		f := &fakeChat{t: t, wantKey: testKey, replies: []reply{{400, nil, []byte(`{"error":{"message":"` + long + `"}}`)}}}
		_, ep := f.start(t)
		b := newCtx(t)
		b.user("q")
		_, err := adapterFor(ep).Generate(context.Background(), b.blobs, chatRequest(b))
		var pe *provider.Error
		if !errors.As(err, &pe) || len(pe.Message) > httpx.MaxMessageBytes+len("…") || !strings.HasSuffix(pe.Message, "…") || !strings.HasPrefix(pe.Message, "éé") {
			t.Fatalf("got %d bytes: %v", len(pe.Message), err)
		}
	})
}

func TestAdapterConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ep := endpoint.Endpoint{BaseURL: "http://" + addr + "/v1", APIKey: testKey}
	b := newCtx(t)
	b.user("q")
	_, err = adapterFor(ep).Generate(context.Background(), b.blobs, chatRequest(b))
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
	ep := endpoint.Endpoint{BaseURL: srv.URL + "/v1"}
	b := newCtx(t)
	b.user("q")

	// The client's own timeout is a network failure: retryable.
	a := New(endpoint.Static{"fake": ep}, &http.Client{Timeout: 50 * time.Millisecond})
	_, err := a.Generate(context.Background(), b.blobs, chatRequest(b))
	var pe *provider.Error
	if !errors.As(err, &pe) || !pe.Retryable {
		t.Fatalf("client timeout: %v", err)
	}

	// The caller cancelling is not a provider failure.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = adapterFor(ep).Generate(ctx, b.blobs, chatRequest(b))
	if !errors.Is(err, context.Canceled) || errors.As(err, &pe) {
		t.Fatalf("cancel: %v", err)
	}
}

func TestAdapterTerminalTransportErrors(t *testing.T) {
	b := newCtx(t)
	b.user("q")
	a := New(endpoint.Static{"fake": {BaseURL: "http://example.invalid/v1"}}, &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, notRetryable{}
	})})
	_, err := a.Generate(context.Background(), b.blobs, chatRequest(b))
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

func TestAdapterConfigErrors(t *testing.T) {
	b := newCtx(t)
	b.user("q")
	a := New(endpoint.Static{}, nil)
	if _, err := a.Generate(context.Background(), b.blobs, chatRequest(b)); !errors.Is(err, endpoint.ErrUnknownProvider) {
		t.Fatalf("unknown provider: %v", err)
	}
	req := chatRequest(b)
	req.Model.APIKind = core.APIAnthropicMessages
	if _, err := a.Generate(context.Background(), b.blobs, req); err == nil || !strings.Contains(err.Error(), "API kind") {
		t.Fatalf("wrong API kind: %v", err)
	}
}
