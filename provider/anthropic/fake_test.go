package anthropic

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/provider/endpoint"
)

const testKey = "sk-ant-test-9f8e7d6c5b4a-SECRET"

// fakeMessages is an in-process Messages API server: it checks the request
// line, version and credentials the way the API does, records bodies and
// headers, and answers from a queue of replies or a script.
type fakeMessages struct {
	t       *testing.T
	wantKey string // "" means no x-api-key header may be sent

	// respond, when set, answers request n (0-based) instead of replies.
	respond func(n int, body []byte) reply

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

func (f *fakeMessages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail := func(status int, typ, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, typ, msg)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		fail(http.StatusNotFound, "not_found_error", "unexpected "+r.Method+" "+r.URL.Path)
		return
	}
	if v := r.Header.Get("anthropic-version"); v != AnthropicVersion {
		fail(http.StatusBadRequest, "invalid_request_error", "anthropic-version: "+v)
		return
	}
	if r.Header.Get("Authorization") != "" {
		fail(http.StatusBadRequest, "invalid_request_error", "unexpected Authorization header")
		return
	}
	key := r.Header.Get("x-api-key")
	if key != f.wantKey {
		fail(http.StatusUnauthorized, "authentication_error", "invalid x-api-key: "+key)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		fail(http.StatusUnsupportedMediaType, "invalid_request_error", "content type "+ct)
		return
	}
	body, _ := io.ReadAll(r.Body)
	n := len(f.bodies)
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	var rep reply
	switch {
	case f.respond != nil:
		rep = f.respond(n, body)
	case len(f.replies) > 0:
		rep, f.replies = f.replies[0], f.replies[1:]
	default:
		fail(http.StatusTeapot, "fake_error", "fake: no reply left")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	for k, v := range rep.headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(rep.status)
	w.Write(rep.body)
}

func (f *fakeMessages) start(t *testing.T) (*httptest.Server, endpoint.Endpoint) {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv, endpoint.Endpoint{BaseURL: srv.URL, APIKey: f.wantKey}
}

func (f *fakeMessages) requests() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.bodies...)
}

func adapterFor(ep endpoint.Endpoint) *Adapter {
	return New(endpoint.Static{"anthropic": ep}, nil)
}
