package responses

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/provider/endpoint"
)

const testKey = "sk-test-9f8e7d6c5b4a-SECRET"

// fakeResponses is an in-process Responses server: it checks the request line,
// credentials and the API's input rules, records bodies and answers with
// scripted replies (recorded bytes, usually).
type fakeResponses struct {
	wantKey string // "" means no Authorization header may be sent

	mu      sync.Mutex
	bodies  [][]byte
	paths   []string // request paths, in order (/v1/responses or /v1/responses/compact)
	headers []http.Header
	replies []reply
}

type reply struct {
	status  int
	headers map[string]string
	body    []byte
}

func (f *fakeResponses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method != http.MethodPost || (r.URL.Path != "/v1/responses" && r.URL.Path != "/v1/responses/compact") {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	auth := r.Header.Get("Authorization")
	if (f.wantKey == "" && auth != "") || (f.wantKey != "" && auth != "Bearer "+f.wantKey) {
		// Like OpenAI, echo the key back: the adapter must redact it.
		apiError(w, http.StatusUnauthorized, "Incorrect API key provided: "+strings.TrimPrefix(auth, "Bearer "))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		apiError(w, http.StatusUnsupportedMediaType, "content type "+ct)
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.bodies = append(f.bodies, body)
	f.paths = append(f.paths, r.URL.Path)
	f.headers = append(f.headers, r.Header.Clone())
	var req struct {
		Model string            `json:"model"`
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Model == "" {
		apiError(w, http.StatusBadRequest, "We could not parse the JSON body of your request.")
		return
	}
	if v := inputViolation(req.Input); v != "" {
		apiError(w, http.StatusBadRequest, v)
		return
	}
	if len(f.replies) == 0 {
		apiError(w, http.StatusTeapot, "fake: no reply left")
		return
	}
	rep := f.replies[0]
	f.replies = f.replies[1:]
	w.Header().Set("Content-Type", "application/json")
	for k, v := range rep.headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(rep.status)
	w.Write(rep.body)
}

func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	m, _ := json.Marshal(msg)
	fmt.Fprintf(w, `{"error":{"message":%s,"type":"invalid_request_error","param":null,"code":null}}`, m)
}

func (f *fakeResponses) queue(rs ...reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replies = append(f.replies, rs...)
}

func (f *fakeResponses) requests() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.bodies...)
}

func (f *fakeResponses) requestPaths() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.paths...)
}

func (f *fakeResponses) start(t *testing.T) endpoint.Endpoint {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return endpoint.Endpoint{BaseURL: srv.URL + "/v1", APIKey: f.wantKey}
}

func adapterFor(ep endpoint.Endpoint) *Adapter {
	return New(endpoint.Static{"fake": ep}, nil)
}
