package responses

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

func fakeRequest(b *ctxBuilder) provider.Request {
	return provider.Request{
		SessionID: "sess-42",
		Model:     core.ModelSelection{ProviderID: "fake", APIKind: APIKind, Model: "gpt-5"},
		Entries:   b.entries,
		Tools:     testTools[:1],
	}
}

func TestAdapterToolLoop(t *testing.T) {
	f := &fakeResponses{wantKey: testKey}
	f.queue(reply{status: 200, body: readPayload(t, "reasoning-function-call.json")},
		reply{status: 200, body: readPayload(t, "reasoning-encrypted-summary.json")})
	ep := f.start(t)
	ep.Headers = map[string]string{"OpenAI-Organization": "org-test", "OpenAI-Project": "proj_123"}
	a := adapterFor(ep)

	b := newCtx(t)
	b.instructions("instructions.a", "Be brief.")
	b.user("Write the poem.")
	out, err := a.Generate(context.Background(), b.blobs, fakeRequest(b))
	if err != nil {
		t.Fatal(err)
	}
	if out.Finish != "completed" || len(out.ToolCalls) != 1 || out.ToolCalls[0].CallID != "call_gL7JE6GDeGGsFubqO2XGytyO" ||
		out.ResponseID != "resp_68c42d28772c819684459966ee2201ed0e8bc41441c948f6" || out.Usage.ReasoningTokens != 1792 {
		t.Fatalf("turn 1: %+v", out)
	}
	b.admit(out.Entries, false)
	b.toolResult(out.ToolCalls[0].CallID, out.ToolCalls[0].Name, "plan accepted")

	out, err = a.Generate(context.Background(), b.blobs, fakeRequest(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.ToolCalls) != 0 || len(out.Entries) != 2 || out.Failure != nil {
		t.Fatalf("turn 2: %+v", out)
	}

	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	// Turn 2's input starts with turn 1's input, byte for byte, and carries
	// the reasoning, the call (adjacent) and then the call's output.
	p := inputPrefix(t, reqs[0])
	if !bytes.HasPrefix(inputPrefix(t, reqs[1]), append(p[:len(p):len(p)], ',')) {
		t.Fatalf("turn 2 does not extend turn 1")
	}
	in := parseRequest(t, reqs[1]).Input
	if len(in) != 4 || str(t, members(t, in[1])["type"]) != "reasoning" || str(t, members(t, in[2])["type"]) != "function_call" ||
		canon(t, in[3]) != `{"call_id":"call_gL7JE6GDeGGsFubqO2XGytyO","output":"plan accepted","type":"function_call_output"}` {
		t.Fatalf("turn 2 input: %s", in)
	}
	for _, body := range reqs {
		for _, want := range []string{`"prompt_cache_key":"sess-42"`, `"store":false`, `"include":["reasoning.encrypted_content"]`, `"instructions":"Be brief."`} {
			if !bytes.Contains(body, []byte(want)) {
				t.Fatalf("request lacks %s", want)
			}
		}
	}
	h := f.headers[0]
	if h.Get("OpenAI-Organization") != "org-test" || h.Get("OpenAI-Project") != "proj_123" || h.Get("Accept") != "application/json" {
		t.Fatalf("headers %v", h)
	}
}

func TestAdapterSendsParams(t *testing.T) {
	f := &fakeResponses{}
	f.queue(reply{status: 200, body: readPayload(t, "reasoning-encrypted-summary.json")})
	a := adapterFor(f.start(t))
	b := newCtx(t)
	b.user("q")
	req := fakeRequest(b)
	req.Params = json.RawMessage(`{"reasoning":{"effort":"low"},"serviceTier":"flex","version":1}`)
	if _, err := a.Generate(context.Background(), b.blobs, req); err != nil {
		t.Fatal(err)
	}
	if body := f.requests()[0]; !bytes.Contains(body, []byte(`,"reasoning":{"effort":"low"},"service_tier":"flex"}`)) {
		t.Fatalf("params not sent: %s", body)
	}
}

func TestAdapterNoKeyNoAuthorization(t *testing.T) {
	f := &fakeResponses{}
	f.queue(reply{status: 200, body: readPayload(t, "refusal.json")})
	b := newCtx(t)
	b.user("q")
	out, err := adapterFor(f.start(t)).Generate(context.Background(), b.blobs, fakeRequest(b))
	if err != nil {
		t.Fatal(err)
	}
	if out.Failure != nil || len(out.Entries) != 1 {
		t.Fatalf("refusal: %+v", out)
	}
}

func TestAdapterResolvesEveryCall(t *testing.T) {
	// A rotated key is used by the next call without rebuilding the adapter.
	key := "old-key-123456"
	f := &fakeResponses{wantKey: "new-key-654321"}
	f.queue(reply{status: 200, body: readPayload(t, "api-reference-web-search.json")})
	base := f.start(t).BaseURL
	a := New(resolverFunc(func(string) (endpoint.Endpoint, error) {
		return endpoint.Endpoint{BaseURL: base, APIKey: key}, nil
	}), nil)
	b := newCtx(t)
	b.user("q")
	_, err := a.Generate(context.Background(), b.blobs, fakeRequest(b))
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != 401 || pe.Retryable {
		t.Fatalf("old key: %v", err)
	}
	if strings.Contains(err.Error(), key) || !strings.Contains(pe.Message, "[redacted]") {
		t.Fatalf("error echoes the key: %v", err)
	}
	key = "new-key-654321"
	if _, err := a.Generate(context.Background(), b.blobs, fakeRequest(b)); err != nil {
		t.Fatalf("new key: %v", err)
	}
}

type resolverFunc func(string) (endpoint.Endpoint, error)

func (r resolverFunc) Resolve(id string) (endpoint.Endpoint, error) { return r(id) }

func TestAdapterErrorClassification(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name       string
		rep        reply
		retryable  bool
		retryAfter time.Duration
		msg        string
	}{
		{"429 seconds", reply{429, map[string]string{"Retry-After": "7"}, []byte(`{"error":{"message":"Rate limit reached for gpt-5","type":"requests","code":"rate_limit_exceeded"}}`)},
			true, 7 * time.Second, "Rate limit reached for gpt-5"},
		{"429 date", reply{429, map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, []byte(`{"error":{"message":"slow down"}}`)},
			true, 90 * time.Second, "slow down"},
		{"429 quota", reply{429, nil, []byte(`{"error":{"message":"You exceeded your current quota","code":"insufficient_quota"}}`)},
			false, 0, "You exceeded your current quota"},
		{"500", reply{500, nil, []byte(`{"error":{"message":"The server had an error while processing your request."}}`)}, true, 0, "The server had an error while processing your request."},
		{"503 retry-after", reply{503, map[string]string{"Retry-After": "2"}, []byte(`upstream overloaded`)}, true, 2 * time.Second, "upstream overloaded"},
		{"502 empty", reply{502, nil, nil}, true, 0, "Bad Gateway"},
		{"408", reply{408, nil, []byte(`{"message":"timeout"}`)}, true, 0, "timeout"},
		{"409", reply{409, nil, []byte(`{"error":"conflict"}`)}, true, 0, "conflict"},
		{"400 with retry-after", reply{400, map[string]string{"Retry-After": "5"}, []byte(`{"error":{"message":"Item 'rs_1' of type 'reasoning' was provided without its required following item.","param":"input","code":null}}`)},
			false, 5 * time.Second, "Item 'rs_1' of type 'reasoning' was provided without its required following item."},
		{"404", reply{404, nil, []byte(`{"error":{"message":"The model 'gpt-9' does not exist"}}`)}, false, 0, "The model 'gpt-9' does not exist"},
		{"echoed key", reply{400, nil, []byte(`{"error":{"message":"bad header Bearer ` + testKey + `"}}`)}, false, 0, "bad header Bearer [redacted]"},
		{"echoed header", reply{403, nil, []byte(`{"error":{"message":"project proj_secret_abcdef denied"}}`)}, false, 0, "project [redacted] denied"},
		{"200 not a response", reply{200, nil, []byte(`{"error":{"message":"upstream failed"}}`)}, false, 0, "responses: decode response: response has no output array"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeResponses{wantKey: testKey}
			f.queue(c.rep)
			ep := f.start(t)
			ep.Headers = map[string]string{"OpenAI-Project": "proj_secret_abcdef"}
			a := adapterFor(ep)
			a.now = func() time.Time { return now }
			b := newCtx(t)
			b.user("q")
			_, err := a.Generate(context.Background(), b.blobs, fakeRequest(b))
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("want *provider.Error, got %v", err)
			}
			if pe.Status != c.rep.status || pe.Retryable != c.retryable || pe.RetryAfter != c.retryAfter || pe.Message != c.msg {
				t.Fatalf("got %+v", pe)
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), "proj_secret_abcdef") {
				t.Fatal("error contains a secret")
			}
		})
	}

	t.Run("long message truncated", func(t *testing.T) {
		long := strings.Repeat("é", 2000)
		f := &fakeResponses{wantKey: testKey}
		f.queue(reply{400, nil, []byte(`{"error":{"message":"` + long + `"}}`)})
		b := newCtx(t)
		b.user("q")
		_, err := adapterFor(f.start(t)).Generate(context.Background(), b.blobs, fakeRequest(b))
		var pe *provider.Error
		if !errors.As(err, &pe) || len(pe.Message) > httpx.MaxMessageBytes+len("…") || !strings.HasSuffix(pe.Message, "…") || !strings.HasPrefix(pe.Message, "éé") {
			t.Fatalf("got %v", err)
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
	_, err = adapterFor(ep).Generate(context.Background(), b.blobs, fakeRequest(b))
	var pe *provider.Error
	if !errors.As(err, &pe) || !pe.Retryable || pe.Status != 0 {
		t.Fatalf("want retryable transport error, got %v", err)
	}
	if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), addr+"/v1") {
		t.Fatalf("transport error repeats secrets or the URL: %v", err)
	}
}

func TestAdapterBadBaseURL(t *testing.T) {
	b := newCtx(t)
	b.user("q")
	ep := endpoint.Endpoint{BaseURL: "http://user:" + testKey + "@bad host/v1"}
	_, err := adapterFor(ep).Generate(context.Background(), b.blobs, fakeRequest(b))
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Retryable || strings.Contains(err.Error(), testKey) {
		t.Fatalf("got %v", err)
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
	_, err := a.Generate(context.Background(), b.blobs, fakeRequest(b))
	var pe *provider.Error
	if !errors.As(err, &pe) || !pe.Retryable {
		t.Fatalf("client timeout: %v", err)
	}

	// The caller cancelling is not a provider failure.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = adapterFor(ep).Generate(ctx, b.blobs, fakeRequest(b))
	if !errors.Is(err, context.Canceled) || errors.As(err, &pe) {
		t.Fatalf("cancel: %v", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type notRetryable struct{}

func (notRetryable) Error() string   { return "cassette exhausted" }
func (notRetryable) Retryable() bool { return false }

func TestAdapterTerminalTransportErrors(t *testing.T) {
	b := newCtx(t)
	b.user("q")
	a := New(endpoint.Static{"fake": {BaseURL: "http://example.invalid/v1"}}, &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, notRetryable{}
	})})
	_, err := a.Generate(context.Background(), b.blobs, fakeRequest(b))
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Retryable {
		t.Fatalf("an error that says it is not retryable: %v", err)
	}
}

func TestAdapterFailsBeforeIO(t *testing.T) {
	b := newCtx(t)
	b.user("q")
	sent := false
	a := New(endpoint.Static{"fake": {BaseURL: "http://example.invalid/v1"}}, &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		sent = true
		return nil, errors.New("unreachable")
	})})

	req := fakeRequest(b)
	req.Params = json.RawMessage(`{"version":1,"extra":{"model":"other"}}`)
	if _, err := a.Generate(context.Background(), b.blobs, req); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("bad params: %v", err)
	}
	req = fakeRequest(b)
	req.Model.APIKind = core.APIChatCompletions
	if _, err := a.Generate(context.Background(), b.blobs, req); err == nil || !strings.Contains(err.Error(), "API kind") {
		t.Fatalf("wrong API kind: %v", err)
	}
	req = fakeRequest(b)
	req.Model.ProviderID = "nobody"
	if _, err := a.Generate(context.Background(), b.blobs, req); !errors.Is(err, endpoint.ErrUnknownProvider) {
		t.Fatalf("unknown provider: %v", err)
	}
	// A provider whose record admits only Chat Completions is refused, not
	// sent a Responses request.
	chatOnly := New(endpoint.Static{"fake": {BaseURL: "http://example.invalid/v1", APIKinds: []string{core.APIChatCompletions}}}, a.client)
	if _, err := chatOnly.Generate(context.Background(), b.blobs, fakeRequest(b)); !errors.Is(err, endpoint.ErrAPIKindNotAdmitted) {
		t.Fatalf("kind not admitted: %v", err)
	}
	if sent {
		t.Fatal("a request was sent")
	}
}
