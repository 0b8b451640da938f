package runtime

import (
	"time"

	"github.com/cairn-agents/cairn/core"
)

// Observer hears what a host and its executor do, for metrics and traces:
// counts, durations and ids, never content. Its methods must be cheap and
// must not block; a nil Observer hears nothing.
type Observer interface {
	// ProviderCall is one provider attempt: a generation or a compaction.
	ProviderCall(c ProviderCallInfo)
	// ToolCall is one tool call the executor ran.
	ToolCall(c ToolCallInfo)
	// Generated is a generation's usage, and the fraction of its
	// request's segment bytes that repeat the session's last request
	// (negative when there is no last request to compare with).
	Generated(usage core.Usage, prefixFraction float64)
	// Committed are the events a host appended to a session's log.
	Committed(sessionID string, events []core.Event)
}

// ProviderCallInfo is one provider attempt. RunID and Turn are empty for a
// compaction, which CompactionID names instead.
type ProviderCallInfo struct {
	SessionID, RunID    string
	Turn                int
	CompactionID        string
	APIKind, ProviderID string
	Start               time.Time
	Duration            time.Duration
	Failed              bool
}

// ToolCallInfo is one tool call.
type ToolCallInfo struct {
	SessionID, RunID string
	Turn             int
	CallID, Name     string
	Start            time.Time
	Duration         time.Duration
	Failed           bool
}

// Observers hears with each of its observers, in order.
type Observers []Observer

func (os Observers) ProviderCall(c ProviderCallInfo) {
	for _, o := range os {
		o.ProviderCall(c)
	}
}

func (os Observers) ToolCall(c ToolCallInfo) {
	for _, o := range os {
		o.ToolCall(c)
	}
}

func (os Observers) Generated(u core.Usage, f float64) {
	for _, o := range os {
		o.Generated(u, f)
	}
}

func (os Observers) Committed(sessionID string, events []core.Event) {
	for _, o := range os {
		o.Committed(sessionID, events)
	}
}
