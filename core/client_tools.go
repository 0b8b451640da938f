package core

import (
	"encoding/json"

	"github.com/cairn-agents/cairn/content"
)

// ClientTool is a tool the client runs: the model sees its definition like
// a built-in tool's; when the model calls it, the call waits (its run's
// batch parks) until the client submits the call's result.
type ClientTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema object of the call's arguments, in
	// canonical form; the API checks that it compiles as a schema.
	Parameters json.RawMessage `json:"parameters"`
	// TimeoutMs, when positive, bounds how long a call waits for the
	// client: then the host expires it (ExpireToolCall) and the model sees
	// the constant "timed out" error result.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
}

// Bounds on a client tool's definition.
const (
	MaxClientTools           = 128
	MaxClientToolDescription = 4096
	MaxClientToolParameters  = 64 << 10
	MaxClientToolTimeoutMs   = 7 * 24 * 60 * 60 * 1000
)

// clientTool returns the client tool named name, or nil.
func (cfg SessionConfig) clientTool(name string) *ClientTool {
	for i := range cfg.ClientTools {
		if cfg.ClientTools[i].Name == name {
			return &cfg.ClientTools[i]
		}
	}
	return nil
}

// validClientToolName is the name rule all three provider APIs accept.
func validClientToolName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// validateClientTools checks the client tools' definitions: each is named
// once, granted (named in Tools), and has a JSON object as its parameters.
func validateClientTools(cfg SessionConfig) error {
	if len(cfg.ClientTools) > MaxClientTools {
		return reject(RejectInvalidConfiguration, "at most %d client tools, got %d", MaxClientTools, len(cfg.ClientTools))
	}
	for i, t := range cfg.ClientTools {
		switch {
		case !validClientToolName(t.Name):
			return reject(RejectInvalidConfiguration, "clientTools[%d]: name %q must be 1 to 64 letters, digits, '_' or '-'", i, t.Name)
		case cfg.clientTool(t.Name) != &cfg.ClientTools[i]:
			return reject(RejectInvalidConfiguration, "client tool %q is defined twice", t.Name)
		case !contains(cfg.Tools, t.Name):
			return reject(RejectInvalidConfiguration, "client tool %q is not among the granted tools", t.Name)
		case len(t.Description) > MaxClientToolDescription:
			return reject(RejectInvalidConfiguration, "client tool %q: description over %d bytes", t.Name, MaxClientToolDescription)
		case len(t.Parameters) > MaxClientToolParameters:
			return reject(RejectInvalidConfiguration, "client tool %q: parameters over %d bytes", t.Name, MaxClientToolParameters)
		case t.TimeoutMs < 0 || t.TimeoutMs > MaxClientToolTimeoutMs:
			return reject(RejectInvalidConfiguration, "client tool %q: timeoutMs must be 0 (none) to %d (7 days)", t.Name, MaxClientToolTimeoutMs)
		case len(t.Parameters) < 2 || t.Parameters[0] != '{':
			return reject(RejectInvalidConfiguration, "client tool %q: parameters must be a JSON Schema object", t.Name)
		}
		if _, err := content.Canonical(t.Parameters); err != nil {
			return reject(RejectInvalidConfiguration, "client tool %q: parameters: %v", t.Name, err)
		}
	}
	return nil
}

// SubmitToolOutput is the client's result of a call to a client tool. The
// core finds the call by its id among the calls awaiting a result.
type SubmitToolOutput struct {
	AtMs   int64  `json:"atMs,omitempty"`
	CallID string `json:"callId"`
	// IsError says the tool failed; the model sees the result as an error.
	IsError bool       `json:"isError,omitempty"`
	Result  EntryInput `json:"result"`
}

// activeCall finds the call with id in the active run's turn. (A run that
// ended keeps no turn: its calls are unknown then.)
func activeCall(s *State, id string) (*Run, *Call) {
	r := s.runs[s.Active]
	if r == nil || r.Turn == nil {
		return nil, nil
	}
	if c := r.Turn.call(id); c != nil {
		return r, c
	}
	return nil, nil
}

func admitSubmitToolOutput(s *State, c SubmitToolOutput) (Admission, error) {
	if c.CallID == "" {
		return Admission{}, reject(RejectInvalidInput, "callId is required")
	}
	r, call := activeCall(s, c.CallID)
	switch {
	case call == nil || !call.Awaiting:
		return Admission{}, reject(RejectUnknownCall, "no call %s of the active run awaits a client result (unknown, not a client tool's, or its run has ended)", c.CallID)
	case call.Completed:
		return Admission{}, reject(RejectCallAnswered, "call %s already has its result", c.CallID)
	}
	status := CallOK
	if c.IsError {
		status = CallError
	}
	return admitToolResult(s, ToolResult{AtMs: c.AtMs, RunID: r.ID, Turn: r.Turn.N, CallID: c.CallID, Status: status, Result: c.Result, client: true})
}

// StatusAwaitingTools is how a running run shows to clients while a call
// of its batch waits for the client's result.
const StatusAwaitingTools = "awaiting_tools"

// ShownStatus is r's status as clients see it: StatusAwaitingTools while
// it runs and a call of its turn waits for the client, else its status.
func (r *Run) ShownStatus() string {
	switch {
	case r.Status != StatusRunning:
	case len(r.PendingApprovals()) > 0:
		return StatusAwaitingApproval
	case len(r.AwaitingCalls()) > 0:
		return StatusAwaitingTools
	}
	return r.Status
}

// AwaitingCalls are the calls of r's turn that wait for the client, in
// the order the model made them.
func (r *Run) AwaitingCalls() []ToolCall {
	return r.openCalls(func(c *Call) bool { return c.Awaiting })
}

// openCalls are the unfinished calls of a running r's turn that keep, in
// the order the model made them.
func (r *Run) openCalls(keep func(*Call) bool) []ToolCall {
	if r.Status != StatusRunning || r.Turn == nil {
		return nil
	}
	var out []ToolCall
	for _, c := range r.Turn.Calls {
		if !c.Completed && keep(c) {
			out = append(out, c.ToolCall)
		}
	}
	return out
}

// ToolDeadline is when a client's call expires unless answered.
type ToolDeadline struct {
	CallID string
	AtMs   int64
}

// ToolDeadlines are the deadlines of the active run's calls that wait for
// the client with a timeout, in call order: a host arms a timer for each
// and submits ExpireToolCall when it fires.
func (s *State) ToolDeadlines() []ToolDeadline {
	r := s.ActiveRun()
	if r == nil || r.Turn == nil {
		return nil
	}
	var out []ToolDeadline
	for _, c := range r.Turn.Calls {
		if at, ok := s.deadline(c); ok {
			out = append(out, ToolDeadline{CallID: c.CallID, AtMs: at})
		}
	}
	return out
}

// deadline is when c expires: a client's unanswered call with a timeout.
func (s *State) deadline(c *Call) (int64, bool) {
	if !c.Awaiting || c.Completed {
		return 0, false
	}
	if t := s.Config.clientTool(c.Name); t != nil && t.TimeoutMs > 0 {
		return c.AwaitingSinceMs + t.TimeoutMs, true
	}
	return 0, false
}

// ExpireToolCall is a host's report that a client's call reached its
// deadline (ToolDeadlines) unanswered: the call completes with the
// constant "timed out" error result. One not due yet, or answered
// meanwhile, is a stale result and changes nothing.
type ExpireToolCall struct {
	AtMs   int64  `json:"atMs,omitempty"`
	CallID string `json:"callId"`
}

func (ExpireToolCall) command() {}

func admitExpireToolCall(s *State, c ExpireToolCall) (Admission, error) {
	r, call := activeCall(s, c.CallID)
	var due int64
	ok := call != nil
	if ok {
		due, ok = s.deadline(call)
	}
	switch {
	case !ok:
		return Admission{}, reject(RejectStaleResult, "no call %s of the active run waits for the client with a deadline", c.CallID)
	case c.AtMs < due:
		return Admission{}, reject(RejectStaleResult, "call %s is not due until %d", c.CallID, due)
	}
	b := s.newBatch(c.AtMs)
	completeCall(b, r.ID, r.Turn.N, call.ToolCall, CallError, constantResult(ContentRefBytes{ToolTimedOutRef, ToolTimedOutBytes}, "timed out"))
	endBatchIfDone(b, r, r.Turn, call.CallID)
	return Admission{RunID: r.ID, Status: StatusRunning, Proposals: b.props}, nil
}
