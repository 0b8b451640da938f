package core

import "fmt"

// Rejection kinds: the stable names clients branch on (JSON-RPC data.kind).
const (
	RejectRevisionConflict     = "revision_conflict"
	RejectUnknownReference     = "unknown_reference"
	RejectActiveWork           = "active_work"
	RejectInvalidConfiguration = "invalid_configuration"
	RejectDuplicateSubmission  = "duplicate_submission"
	RejectInvalidInput         = "invalid_input"
	RejectSessionClosed        = "session_closed"
	RejectSessionExists        = "session_exists"
	RejectNoActiveRun          = "no_active_run"
	RejectStaleResult          = "stale_result"
	// A client tool's result for a call that is not awaiting one: no such
	// call of a running run (unknown, not a client tool's, or its run has
	// ended), or one already answered.
	RejectUnknownCall  = "unknown_call"
	RejectCallAnswered = "call_answered"
	// A decision for a call that waits for none, or one that contradicts
	// the decision already recorded.
	RejectApprovalConflict = "approval_conflict"
)

// Rejection is a typed admission refusal. A rejected command changes nothing.
type Rejection struct {
	Kind    string
	Message string
	// Expected and Actual are set for revision conflicts.
	Expected *int64
	Actual   *int64
}

func (r *Rejection) Error() string { return r.Kind + ": " + r.Message }

func reject(kind, format string, args ...any) *Rejection {
	return &Rejection{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

func revisionConflict(expected, actual int64) *Rejection {
	return &Rejection{
		Kind:     RejectRevisionConflict,
		Message:  fmt.Sprintf("expected context revision %d, actual %d", expected, actual),
		Expected: &expected,
		Actual:   &actual,
	}
}
