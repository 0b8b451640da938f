package mcptools

import (
	"net/http"
	"testing"

	"github.com/cairn-agents/cairn/internal/conntest"
)

// Tool calls made at once to one server keep their connections for the
// next ones: net/http's default transport keeps two a host.
func TestServersKeepTheConnectionsOfCallsMadeAtOnce(t *testing.T) {
	s := New(nil, Options{})
	conntest.CheckKept(t, `{}`, func(url string) (func() error, func()) {
		client := &http.Client{Transport: s.transport}
		return conntest.Get(client, url), client.CloseIdleConnections
	})
}
