package core_test

import (
	"testing"

	"github.com/cairn-agents/cairn/core"
)

// The spec: the runtime refreshes linked material "when no run is active
// or already queued", before an idle session admits new run work.
func TestSpec_RefreshOnlyAtTheIdleBoundary(t *testing.T) {
	state := func(edit func(*core.State)) *core.State {
		s := core.NewState()
		s.Opened = true
		edit(s)
		return s
	}
	cases := []struct {
		name string
		s    *core.State
		want bool
	}{
		{"open and idle", state(func(*core.State) {}), true},
		{"not opened", core.NewState(), false},
		{"closed", state(func(s *core.State) { s.Closed = true }), false},
		{"a run is active", state(func(s *core.State) { s.Active = "run_1" }), false},
		{"a run is queued", state(func(s *core.State) { s.Queue = []string{"run_1"} }), false},
	}
	for _, c := range cases {
		if got := c.s.AtRefreshBoundary(); got != c.want {
			t.Errorf("%s: AtRefreshBoundary = %v, want %v", c.name, got, c.want)
		}
	}
}
