package core

// Approval policies and states.
const (
	// ApprovalAlways: every call of the tool waits for a person's decision.
	ApprovalAlways = "always"

	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
)

// StatusAwaitingApproval is how a running run shows to clients while a
// call of its batch waits for a person's decision.
const StatusAwaitingApproval = "awaiting_approval"

// MaxApprovalReason bounds a decision's reason, which the event keeps.
const MaxApprovalReason = 4096

// ToolApproval is the approval policy of one tool.
type ToolApproval struct {
	Tool   string `json:"tool"`
	Policy string `json:"policy"`
}

// needsApproval reports whether calls of the tool name wait for a decision.
func (cfg SessionConfig) needsApproval(name string) bool {
	for _, a := range cfg.Approvals {
		if a.Tool == name {
			return a.Policy == ApprovalAlways
		}
	}
	return false
}

// validateApprovals checks that the approvals are sorted by tool, name
// each granted tool once, and a known policy.
func validateApprovals(cfg SessionConfig) error {
	for i, a := range cfg.Approvals {
		switch {
		case !contains(cfg.Tools, a.Tool):
			return reject(RejectInvalidConfiguration, "approvals: %q is not among the granted tools", a.Tool)
		case a.Policy != ApprovalAlways:
			return reject(RejectInvalidConfiguration, "approvals: %q: the policy must be %q", a.Tool, ApprovalAlways)
		case i > 0 && cfg.Approvals[i-1].Tool >= a.Tool:
			return reject(RejectInvalidConfiguration, "approvals: sorted by tool, each once (%q after %q)", a.Tool, cfg.Approvals[i-1].Tool)
		}
	}
	return nil
}

// DecideApproval records a person's decision on a call that waits for one.
// A denial needs Result: what the model sees instead of the call's output
// (the API stores the reason as that text). The same decision again is a
// no-op; the other one is RejectApprovalConflict.
type DecideApproval struct {
	AtMs    int64      `json:"atMs,omitempty"`
	CallID  string     `json:"callId"`
	Approve bool       `json:"approve"`
	Reason  string     `json:"reason,omitempty"`
	Result  EntryInput `json:"result,omitzero"`
}

func (DecideApproval) command() {}

// PendingApprovals are the calls of r's turn that wait for a decision, in
// the order the model made them.
func (r *Run) PendingApprovals() []ToolCall {
	return r.openCalls(func(c *Call) bool { return c.Approval == ApprovalPending })
}

func admitDecideApproval(s *State, c DecideApproval) (Admission, error) {
	if c.CallID == "" {
		return Admission{}, reject(RejectInvalidInput, "callId is required")
	}
	if len(c.Reason) > MaxApprovalReason {
		return Admission{}, reject(RejectInvalidInput, "reason is over %d bytes", MaxApprovalReason)
	}
	r, call := activeCall(s, c.CallID)
	if call == nil || call.Approval == "" {
		return Admission{}, reject(RejectUnknownCall, "no call %s of the active run waits for a decision (unknown, needs none, or its run has ended)", c.CallID)
	}
	if call.Completed && call.Approval == ApprovalPending {
		return Admission{}, reject(RejectCallAnswered, "call %s has ended without a decision", c.CallID)
	}
	decided := ApprovalDenied
	if c.Approve {
		decided = ApprovalApproved
	}
	switch call.Approval {
	case decided:
		return Admission{RunID: r.ID, Status: r.Status}, nil // the same decision again
	case ApprovalApproved, ApprovalDenied:
		return Admission{}, reject(RejectApprovalConflict, "call %s was already %s", c.CallID, call.Approval)
	}
	if !c.Approve {
		if err := validRef(c.Result); err != nil {
			return Admission{}, err
		}
	}
	t := r.Turn
	joins := callJoins(r.ID, t.N, call.CallID)
	b := s.newBatch(c.AtMs)
	b.add(KindToolApprovalDecided, joins, ToolApprovalDecided{RunID: r.ID, Turn: t.N, CallID: call.CallID, Approved: c.Approve, Reason: c.Reason})
	switch {
	case !c.Approve:
		completeCall(b, r.ID, t.N, call.ToolCall, CallError, c.Result)
		endBatchIfDone(b, r, t, call.CallID)
	case s.Config.clientTool(call.Name) != nil:
		b.add(KindToolCallAwaiting, joins, ToolCallAwaiting{RunID: r.ID, Turn: t.N, CallID: call.CallID, Name: call.Name})
	}
	return Admission{RunID: r.ID, Status: StatusRunning, Proposals: b.props}, nil
}
