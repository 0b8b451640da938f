package api

import (
	"context"
	"testing"

	"github.com/cairn-agents/cairn/internal/conntest"
)

// A client making calls at once keeps their connections for its next
// calls made at once: net/http's default transport keeps two a host, so a
// program following many sessions would open a connection for most calls.
func TestAClientKeepsTheConnectionsOfCallsMadeAtOnce(t *testing.T) {
	conntest.CheckKept(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, func(url string) (func() error, func()) {
		c := NewClient(url, nil)
		call := func() error {
			return c.Call(context.Background(), "session/read", map[string]string{"sessionId": "s"}, nil)
		}
		return call, c.http.CloseIdleConnections
	})
}
