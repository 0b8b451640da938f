package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store/sqlite"
)

// An instance is a whole embedded Cairn served in-process: the SQLite store
// in a temporary directory, a local host whose Chat Completions adapter talks
// to a fake provider, the JSON-RPC API and the inspector on one listener.

// fakeModel is the model every test session uses.
var fakeModel = core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "fake-model"}

// fakeChat answers Chat Completions requests in the real wire format, after
// an adjustable delay, with a reply derived from the last user message. Its
// usage figures claim a provider cache hit on the previous request's length,
// so the cache chart has a third series to draw.
type fakeChat struct {
	srv   *httptest.Server
	delay atomic.Int64 // nanoseconds before each answer

	mu    sync.Mutex
	prev  []byte // the previous request body
	reply func(user string) string
	calls int
	// release lets a streamed answer go on after its first half.
	release chan struct{}
}

func newFakeChat(t *testing.T) *fakeChat {
	f := &fakeChat{reply: func(user string) string { return "Noted: " + user }, release: make(chan struct{}, 16)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeChat) setDelay(d time.Duration) { f.delay.Store(int64(d)) }

func (f *fakeChat) setReply(fn func(user string) string) {
	f.mu.Lock()
	f.reply = fn
	f.mu.Unlock()
}

func (f *fakeChat) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if d := time.Duration(f.delay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	user := ""
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) != nil {
			var parts []struct{ Text string }
			_ = json.Unmarshal(m.Content, &parts)
			for _, p := range parts {
				s += p.Text
			}
		}
		user = s
	}
	f.mu.Lock()
	f.calls++
	n, reply := f.calls, f.reply(user)
	// Like a provider's prompt cache: whole blocks of the prefix this
	// request shares with the previous one, at about 4 bytes a token.
	same := 0
	for same < len(body) && same < len(f.prev) && body[same] == f.prev[same] {
		same++
	}
	cached := (same / 4) &^ 7
	f.prev = body
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if tool, ok := strings.CutPrefix(reply, callPrefix); ok {
		tool, args, _ := strings.Cut(tool, "|")
		if args == "" {
			args = `{"path":"/"}`
		}
		quoted, _ := json.Marshal(args)
		fmt.Fprintf(w, `{"id":"chatcmpl-%d","object":"chat.completion","created":1764720000,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
			n, n, tool, quoted)
		return
	}
	if bytes.Contains(body, []byte(`"stream":true`)) {
		f.stream(w, r, n, reply)
		return
	}
	text, _ := json.Marshal(reply)
	content, refusal := string(text), "null"
	if r, ok := strings.CutPrefix(reply, refusePrefix); ok {
		text, _ = json.Marshal(r)
		content, refusal = "null", string(text)
	}
	prompt := len(body) / 4
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-%d","object":"chat.completion","created":1764720000,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":%s,"refusal":%s,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`,
		n, content, refusal, prompt, len(reply)/4+1, prompt+len(reply)/4+1, cached)
}

// stream answers reply as a Chat Completions event stream: its first half,
// then (once the test sends on release) the rest.
func (f *fakeChat) stream(w http.ResponseWriter, r *http.Request, n int, reply string) {
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta, finish string) {
		fmt.Fprintf(w, `data: {"id":"chatcmpl-%d","object":"chat.completion.chunk","created":1764720000,"model":"fake-model","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", n, delta, finish)
		w.(http.Flusher).Flush()
	}
	half := len(reply) / 2
	first, _ := json.Marshal(reply[:half])
	rest, _ := json.Marshal(reply[half:])
	chunk(`{"role":"assistant","content":`+string(first)+`}`, "null")
	select {
	case <-f.release:
	case <-r.Context().Done():
		return
	}
	chunk(`{"content":`+string(rest)+`}`, `"stop"`)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// refusePrefix makes a reply the model's refusal (content null, refusal set).
const refusePrefix = "REFUSE:"

// callPrefix makes a reply a call of the tool named after it, with
// arguments {"path":"/"}, or the JSON after a "|": "CALL:name|{...}".
const callPrefix = "CALL:"

type instance struct {
	url    string
	addr   string
	store  *sqlite.Store
	host   *local.Host
	client *api.Client
	chat   *fakeChat
	rpc    *rpcLog
}

type instanceOptions struct {
	// seed writes sessions straight into the store before the host starts.
	seed func(ctx context.Context, st *sqlite.Store)
	// apiKey, when set, makes the server hosted-like: every call needs it.
	apiKey string
	// stream has the model's answers streamed (the provider record's
	// "stream": true); the fake holds each after its first half until
	// the test sends on chat.release.
	stream bool
}

// keyedHosts serves the one host to requests bearing the key, like the
// hosted mode's per-universe keys.
type keyedHosts struct {
	key  string
	host api.Host
}

func (k keyedHosts) HostFor(_ context.Context, bearer string) (api.Host, error) {
	if bearer != k.key {
		return nil, api.ErrUnauthorized
	}
	return k.host, nil
}

func newInstance(t *testing.T, opt instanceOptions) *instance {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if opt.seed != nil {
		opt.seed(ctx, st)
	}
	fc := newFakeChat(t)
	tools, err := runtime.NewTools(append(runtime.VFSTools(), runtime.AgentRun())...)
	if err != nil {
		t.Fatal(err)
	}
	exec := &runtime.Executor{
		Blobs: st,
		Adapters: map[string]provider.Adapter{
			core.APIChatCompletions: chat.New(endpoint.Static{
				"fake":   {BaseURL: fc.srv.URL + "/v1", APIKey: "fake-key", Stream: opt.stream},
				"openai": {BaseURL: fc.srv.URL + "/v1", APIKey: "fake-key"}, // for pictures with a familiar model name
			}, fc.srv.Client()),
		},
		Tools: tools,
		Files: st,
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	host := local.New(local.Options{Log: st, Blobs: st, Executor: exec, Logger: quiet, Checkpoints: st})
	if err := host.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(host.Close)
	var hosts api.Hosts = api.SingleHost{Host: host}
	if opt.apiKey != "" {
		hosts = keyedHosts{key: opt.apiKey, host: host}
	}
	rpc := &rpcLog{}
	// Served as `cairn serve` does: every route behind the API's Host and
	// Origin checks, which the page must pass.
	apiServer := api.NewServerFor(hosts, api.ServerOptions{APIKinds: []string{core.APIChatCompletions}, Logger: quiet})
	srv := httptest.NewServer(apiServer.Protect(WithAPI(rpc.wrap(apiServer.Handler()))))
	t.Cleanup(srv.Close) // registered last, so it closes first
	in := &instance{url: srv.URL, addr: strings.TrimPrefix(srv.URL, "http://"), store: st, host: host, chat: fc, rpc: rpc}
	in.client = api.NewClient(srv.URL, nil)
	if opt.apiKey != "" {
		in.client.WithAPIKey(opt.apiKey)
	}
	return in
}

// rpcCall is one JSON-RPC request as the server saw it.
type rpcCall struct {
	Method  string
	Auth    string // the Authorization header
	Status  int
	Browser bool // sent by the page (not by the test's Go client)
}

// rpcLog records the JSON-RPC calls reaching the server.
type rpcLog struct {
	mu    sync.Mutex
	calls []rpcCall
}

func (l *rpcLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct{ Method string }
		_ = json.Unmarshal(body, &req)
		rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		l.mu.Lock()
		l.calls = append(l.calls, rpcCall{Method: req.Method, Auth: r.Header.Get("Authorization"), Status: rec.status,
			Browser: strings.Contains(r.UserAgent(), "Chrome")})
		l.mu.Unlock()
	})
}

func (l *rpcLog) all() []rpcCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]rpcCall(nil), l.calls...)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Flush keeps streaming possible through the wrapper.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// createSession opens a session on the fake model through the API.
func (in *instance) createSession(t *testing.T, id, instructions string) {
	t.Helper()
	_, err := in.client.CreateSession(context.Background(), api.CreateSessionParams{SessionID: id, Model: fakeModel, Instructions: instructions})
	if err != nil {
		t.Fatalf("creating session %s: %v", id, err)
	}
}

// runToEnd starts a run and waits until it has ended.
func (in *instance) runToEnd(t *testing.T, sessionID, text string) string {
	t.Helper()
	ctx := context.Background()
	r, err := in.client.StartRun(ctx, api.RunStartParams{SessionID: sessionID, Input: []api.InputPart{{Type: "text", Text: text}}})
	if err != nil {
		t.Fatalf("starting a run: %v", err)
	}
	in.waitRun(t, sessionID, r.RunID)
	return r.RunID
}

func (in *instance) waitRun(t *testing.T, sessionID, runID string) api.RunReadResult {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		rr, err := in.client.ReadRun(context.Background(), sessionID, runID)
		if err != nil {
			t.Fatalf("reading run %s: %v", runID, err)
		}
		switch rr.Status {
		case core.StatusCompleted, core.StatusFailed, core.StatusCancelled:
			return rr
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still %s", runID, rr.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
