package runtime

import (
	"context"
	"reflect"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

// NothingToRefresh holds exactly when Refresh reads nothing: a host that
// skips Refresh on it must get what Refresh would have returned.
func TestNothingToRefreshIsWhatRefreshDerivesWithoutReading(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     core.SessionConfig
		nothing bool
	}{
		{"no links, built-in tools only", core.SessionConfig{Tools: []string{"vfs_read_file"}}, true},
		{"a linked workspace", core.SessionConfig{Links: []core.Link{{Mount: "/work", Workspace: "w"}}}, false},
		{"an MCP server's tools", core.SessionConfig{Tools: []string{"vfs_read_file", "docs.*"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NothingToRefresh(tc.cfg); got != tc.nothing {
				t.Fatalf("NothingToRefresh = %t, want %t", got, tc.nothing)
			}
			if !tc.nothing {
				return
			}
			// No blobs, files or MCP servers: Refresh must not need any.
			got, err := (&Executor{}).Refresh(context.Background(), tc.cfg, true)
			if err != nil || !reflect.DeepEqual(got, Refreshed{}) {
				t.Fatalf("Refresh = %+v, %v; want the empty result a host takes instead", got, err)
			}
		})
	}
}
