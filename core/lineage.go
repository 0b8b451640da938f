package core

// ParentRef names where a sub-agent's session was started: the parent
// session, the run and the agent_run call that started it. Depth is 1 for
// the child of a session that has no parent, one more for each level.
type ParentRef struct {
	SessionID string `json:"sessionId"`
	RunID     string `json:"runId"`
	CallID    string `json:"callId"`
	Depth     int    `json:"depth"`
}

// Depth is the session's depth among sub-agents: 0 without a parent.
func (s Summary) Depth() int {
	if s.Parent == nil {
		return 0
	}
	return s.Parent.Depth
}

// validParent checks a child session's parent reference.
func validParent(p *ParentRef) error {
	if p == nil {
		return nil
	}
	if p.SessionID == "" || p.RunID == "" || p.CallID == "" || p.Depth < 1 {
		return reject(RejectInvalidInput, "a child session's parent names a session, run and call, at depth 1 or more")
	}
	return nil
}
