package runtime

import (
	"time"

	"github.com/cairn-agents/cairn/core"
)

// Observer hears what a host and its executor do, for metrics: counts and
// durations, never content or ids. Its methods must be cheap and must not
// block; a nil Observer hears nothing.
type Observer interface {
	// ProviderCall is one provider attempt for a generation: its API
	// kind, its provider, how long it took and whether it failed.
	ProviderCall(apiKind, providerID string, d time.Duration, failed bool)
	// Generated is a generation's usage, and the fraction of its
	// request's segment bytes that repeat the session's last request
	// (negative when there is no last request to compare with).
	Generated(usage core.Usage, prefixFraction float64)
	// Committed are the events a host appended to a session's log.
	Committed(events []core.Event)
}
