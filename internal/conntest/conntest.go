// Package conntest checks that an HTTP client keeps the connections of
// calls it makes at once for the calls after them.
package conntest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// calls is how many calls a round makes at once: more than the two idle
// connections a host net/http's default transport keeps.
const calls = 8

// CheckKept makes two rounds of calls at once, each with the call
// newCaller returns for the server's URL, against a server that answers
// answer only once every call of the round has arrived (so each holds a
// connection). It fails t unless the second round reuses the first
// round's connections. done, when not nil, runs at the end.
func CheckKept(t *testing.T, answer string, newCaller func(url string) (call func() error, done func())) {
	t.Helper()
	var arrived sync.WaitGroup
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		arrived.Wait()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(answer))
	}))
	var opened atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	call, done := newCaller(srv.URL)
	if done != nil {
		defer done()
	}
	round := func() {
		arrived.Add(calls)
		var each sync.WaitGroup
		for range calls {
			each.Go(func() {
				if err := call(); err != nil {
					t.Error(err)
				}
			})
		}
		each.Wait()
	}
	round()
	if n := opened.Load(); n != calls {
		t.Fatalf("the first round opened %d connections, want %d", n, calls)
	}
	round()
	// A connection goes back to the pool just after its response is read,
	// so one may not be back yet; without the pool, six are not.
	if n := opened.Load() - calls; n > 2 {
		t.Fatalf("the second round opened %d more connections; the %d idle ones were not kept", n, calls)
	}
}

// Get is a call for CheckKept: a GET of url through client that reads
// the whole answer, so its connection can go back to the pool.
func Get(client *http.Client, url string) func() error {
	return func() error {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
}
