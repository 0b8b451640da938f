package core

// Commands are what hosts ask of the core. Every command carries the time it
// was observed (AtMs) and any ids it needs: the core has no clock and no
// randomness of its own.

// Command is implemented by every command type.
type Command interface{ command() }

// OpenSession creates the session. Instructions, when set, become the entry
// keyed "instructions.main".
type OpenSession struct {
	AtMs         int64
	SessionID    string
	Config       SessionConfig
	Instructions *EntryInput
	// Parent is set for a sub-agent's session (see ParentRef).
	Parent *ParentRef
}

// ChangeConfig replaces the session config (model within the same API kind,
// tools, parameters, compaction) and, with Instructions, the session's main
// instructions. With ExpectedRevision it applies only to that config
// revision.
type ChangeConfig struct {
	AtMs             int64
	Config           SessionConfig
	Instructions     *EntryInput
	ExpectedRevision *int64
}

// CloseSession ends the session; it must have no active or queued run.
type CloseSession struct {
	AtMs   int64
	Reason string
}

// StartRun submits user input. With a submission id, a retry of the same
// input is a no-op that returns the original run.
type StartRun struct {
	AtMs         int64
	RunID        string
	SubmissionID string
	Input        []InputItem
	// Activations are skill bodies (kind skill_activation) that enter
	// context with the run's input and leave it when the run ends.
	Activations []EntryInput
	// RetryOf names a failed run to go on from where it stopped: the new
	// run has no input of its own (the failed run's is in context already)
	// and its first turn sees the context as the failure left it. Only the
	// session's last run can be retried; retrying it again answers the run
	// that retried it.
	RetryOf string
	// ContextWindow is the model's context window in tokens, as the host
	// knows it (0: unknown). A run that cannot fit is refused, or, when the
	// session compacts standalone, queued behind a compaction.
	ContextWindow int64
}

// Steer adds input to the active run; it enters context at the next turn boundary.
type Steer struct {
	AtMs       int64
	SteeringID string
	Input      []InputItem
}

// CancelRun cancels a queued or active run.
type CancelRun struct {
	AtMs   int64
	RunID  string
	Reason string
}

// FailureResultNotAdmitted is the failure kind of a run (or compaction) whose
// result the host could not admit after bounded attempts.
const FailureResultNotAdmitted = "result_not_admitted"

// FailRun ends a queued or active run as failed, for a host that cannot
// finish it: a result it could not admit after bounded attempts. Unfinished
// tool calls complete as failed.
type FailRun struct {
	AtMs    int64
	RunID   string
	Failure Failure
}

// AppendContext adds entries: messages and instructions through the API;
// catalogs, derived instructions and session-scoped skill activations from
// the runtime.
type AppendContext struct {
	AtMs             int64
	Entries          []EntryInput
	ExpectedRevision *int64
	// Source is SourceAPI (the default) or SourceRuntime.
	Source string
	// AppendUnchanged appends even an edit that would change nothing, as
	// versions before the no-op did: a host replaying decisions made then
	// (a Temporal workflow's history) sets it.
	AppendUnchanged bool
}

// RemoveContext removes entries by key or id.
type RemoveContext struct {
	AtMs             int64
	Keys             []string
	EntryIDs         []string
	ExpectedRevision *int64
}

// GenerationResult reports a finished generation for the planned turn.
type GenerationResult struct {
	AtMs       int64        `json:"atMs,omitempty"`
	RunID      string       `json:"runId"`
	Turn       int          `json:"turn"`
	Entries    []EntryInput `json:"entries,omitempty"`
	ToolCalls  []ToolCall   `json:"toolCalls,omitempty"`
	Finish     string       `json:"finish,omitempty"`
	ResponseID string       `json:"responseId,omitempty"`
	Usage      Usage        `json:"usage"`
	// Failure ends the run as failed (refusal, output limit, terminal
	// provider error, runtime failure); entries, if any, are still applied.
	Failure *Failure `json:"failure,omitempty"`
	// Cache describes the request sent (see CacheFacts); nil when no request
	// was built or the adapter reports none.
	Cache *CacheFacts `json:"cache,omitempty"`
}

// ToolResult reports one finished tool call.
type ToolResult struct {
	AtMs   int64      `json:"atMs,omitempty"`
	RunID  string     `json:"runId"`
	Turn   int        `json:"turn"`
	CallID string     `json:"callId"`
	Status string     `json:"status"`
	Result EntryInput `json:"result"`
	// client is set for a client tool's result (SubmitToolOutput): only
	// those answer a call that awaits the client.
	client bool
}

func (OpenSession) command()      {}
func (ChangeConfig) command()     {}
func (CloseSession) command()     {}
func (StartRun) command()         {}
func (Steer) command()            {}
func (CancelRun) command()        {}
func (FailRun) command()          {}
func (AppendContext) command()    {}
func (RemoveContext) command()    {}
func (GenerationResult) command() {}
func (ToolResult) command()       {}
func (SubmitToolOutput) command() {}
