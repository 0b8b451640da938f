package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// scriptedFake answers request n with replies[n] (the last one after
// that), in an API kind's wire format, and keeps the request bodies.
type scriptedFake struct {
	mu      sync.Mutex
	replies []string
	bodies  [][]byte
	srv     *httptest.Server
	// onRequest, when set, runs with the number of each request (from 0)
	// before it is answered.
	onRequest func(n int)
}

func newScriptedFake(t *testing.T, path, header, key string, replies ...string) *scriptedFake {
	f := &scriptedFake{replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path || r.Header.Get(header) != key {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"wrong path or key"}}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		reply := f.replies[min(len(f.bodies), len(f.replies)-1)]
		f.bodies = append(f.bodies, body)
		n, hook := len(f.bodies)-1, f.onRequest
		f.mu.Unlock()
		if hook != nil {
			hook(n)
		}
		writeAnswer(w, r.URL.Path, body, []byte(reply))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *scriptedFake) requests() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.bodies...)
}
