package e2e

import (
	"encoding/json"
	"fmt"
	"github.com/cairn-agents/cairn/internal/sse"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// fakeChat is an in-process Chat Completions server. It answers each request
// with the next scripted response body, in the exact wire format, and records
// what it was sent. A script step may hold its answer until released.
type fakeChat struct {
	t      *testing.T
	srv    *httptest.Server
	apiKey string

	mu       sync.Mutex
	steps    []fakeStep
	respond  func(n int, body []byte) fakeStep // when set, answers instead of steps
	requests [][]byte
	arrived  chan int // request index, sent when a request arrives
}

type fakeStep struct {
	body    string
	status  int           // an HTTP error status to answer with body instead (0: 200)
	release chan struct{} // nil: answer at once
}

func newFakeChat(t *testing.T, apiKey string) *fakeChat {
	f := &fakeChat{t: t, apiKey: apiKey, arrived: make(chan int, 64)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeChat) baseURL() string { return f.srv.URL + "/v1" }

func (f *fakeChat) script(steps ...fakeStep) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steps = append(f.steps, steps...)
}

// respondWith answers every request with fn(index, body) instead of the
// script, so a request retried after a crash gets the answer its content calls for.
func (f *fakeChat) respondWith(fn func(n int, body []byte) fakeStep) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.respond = fn
}

func (f *fakeChat) bodies() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.requests...)
}

func (f *fakeChat) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+f.apiKey {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, body)
	respond := f.respond
	if respond == nil && n >= len(f.steps) {
		f.mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"message":"fake: script exhausted"}}`)
		return
	}
	var step fakeStep
	if respond == nil {
		step = f.steps[n]
	}
	f.mu.Unlock()
	if respond != nil {
		step = respond(n, body)
	}
	select {
	case f.arrived <- n:
	default: // nobody is counting arrivals
	}
	if step.release != nil {
		select {
		case <-step.release:
		case <-r.Context().Done():
			return // the caller went away (killed): it will ask again
		}
	}
	if step.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(step.status)
		_, _ = io.WriteString(w, step.body)
		return
	}
	writeAnswer(w, r.URL.Path, body, []byte(step.body))
}

// writeAnswer answers as the provider does: a stream when the request asks
// for one (Cairn's default), the whole body otherwise.
func writeAnswer(w http.ResponseWriter, path string, request, answer []byte) {
	if sse.Requested(request) {
		if stream, err := sse.For(path, answer); err == nil {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(stream)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(answer)
}

// textResponse is a Chat Completions body with one assistant text message.
func textResponse(id, text string) string {
	content, _ := json.Marshal(text)
	return fmt.Sprintf(`{"id":%q,"object":"chat.completion","created":1764720000,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":%s,"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":12,"total_tokens":62,"prompt_tokens_details":{"cached_tokens":0}}}`, id, content)
}

// toolCallResponse is a body with one function tool call and null content.
func toolCallResponse(id, callID, name, args string) string {
	a, _ := json.Marshal(args)
	return fmt.Sprintf(`{"id":%q,"object":"chat.completion","created":1764720000,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}],"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":40,"completion_tokens":9,"total_tokens":49}}`, id, callID, name, a)
}
