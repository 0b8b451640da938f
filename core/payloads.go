package core

import "github.com/cairn-agents/cairn/content"

// Payloads of version 1 of each event kind. Field order is the encoding order;
// golden files in core/testdata pin the bytes.

type SessionOpened struct {
	SessionID string        `json:"sessionId"`
	Config    SessionConfig `json:"config"`
	Parent    *ParentRef    `json:"parent,omitempty"`
}

type SessionConfigChanged struct {
	Config SessionConfig `json:"config"`
}

// SessionConfigChangeRequested is a config change waiting for the session
// to be idle: its config and, when given, its main instructions (already a
// complete instructions entry).
type SessionConfigChangeRequested struct {
	Config       SessionConfig `json:"config"`
	Instructions *EntryInput   `json:"instructions,omitempty"`
}

type SessionClosed struct {
	Reason string `json:"reason,omitempty"`
}

type RunAccepted struct {
	RunID        string `json:"runId"`
	SubmissionID string `json:"submissionId,omitempty"`
	// InputFingerprint identifies the submitted payload so a retried
	// submission can be told apart from a different one under the same id.
	InputFingerprint string      `json:"inputFingerprint"`
	Input            []InputItem `json:"input"`
	Queued           bool        `json:"queued"`
	// Activations enter context with the input and expire with the run.
	Activations []EntryInput `json:"activations,omitempty"`
	// RetryOf is the failed run this one goes on from (StartRun.RetryOf).
	RetryOf string `json:"retryOf,omitempty"`
}

// InputItem is one piece of user input recorded when admitted; it becomes a
// context entry only when its run's next turn starts.
type InputItem struct {
	Content       content.ContentRef `json:"content"`
	TokenEstimate TokenEstimate      `json:"tokenEstimate"`
	Preview       string             `json:"preview,omitempty"`
	// Kind is "" for text and InputAudio for audio, which is transcribed
	// before the turn that consumes it; Filename names the audio file.
	Kind     string `json:"kind,omitempty"`
	Filename string `json:"filename,omitempty"`
}

type RunStarted struct {
	RunID string `json:"runId"`
}

type RunSteeringAccepted struct {
	RunID      string      `json:"runId"`
	SteeringID string      `json:"steeringId"`
	Input      []InputItem `json:"input"`
}

type RunCancelRequested struct {
	RunID  string `json:"runId"`
	Reason string `json:"reason,omitempty"`
}

type RunCompleted struct {
	RunID  string              `json:"runId"`
	Output *content.ContentRef `json:"output,omitempty"`
}

type RunFailed struct {
	RunID string  `json:"runId"`
	Error Failure `json:"error"`
}

type RunCancelled struct {
	RunID string `json:"runId"`
}

type TurnStarted struct {
	RunID string `json:"runId"`
	Turn  int    `json:"turn"`
}

// TurnPlanned stores the request's fingerprint and the revisions it was built
// from, never the request itself.
type TurnPlanned struct {
	RunID           string `json:"runId"`
	Turn            int    `json:"turn"`
	ContextRevision int64  `json:"contextRevision"`
	ConfigRevision  int64  `json:"configRevision"`
	Fingerprint     string `json:"fingerprint"`
}

type TurnGenerationRequested struct {
	RunID string `json:"runId"`
	Turn  int    `json:"turn"`
}

type TurnGenerationCompleted struct {
	RunID      string     `json:"runId"`
	Turn       int        `json:"turn"`
	Finish     string     `json:"finish"`
	ResponseID string     `json:"responseId,omitempty"`
	Usage      Usage      `json:"usage"`
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`
	Failure    *Failure   `json:"failure,omitempty"`
	// Cache is the request's prompt-cache facts (optional; see CacheFacts).
	Cache *CacheFacts `json:"cache,omitempty"`
}

// Turn outcomes.
const (
	TurnOutcomeAnswered  = "answered"
	TurnOutcomeToolCalls = "tool_calls"
	TurnOutcomeFailed    = "failed"
	TurnOutcomeCancelled = "cancelled"
)

type TurnCompleted struct {
	RunID   string `json:"runId"`
	Turn    int    `json:"turn"`
	Outcome string `json:"outcome"`
}

type ToolBatchStarted struct {
	RunID   string   `json:"runId"`
	Turn    int      `json:"turn"`
	CallIDs []string `json:"callIds"`
}

type ToolCallStarted struct {
	RunID     string             `json:"runId"`
	Turn      int                `json:"turn"`
	CallID    string             `json:"callId"`
	Name      string             `json:"name"`
	Arguments content.ContentRef `json:"arguments"`
}

type ToolCallCompleted struct {
	RunID  string             `json:"runId"`
	Turn   int                `json:"turn"`
	CallID string             `json:"callId"`
	Status string             `json:"status"`
	Result content.ContentRef `json:"result"`
	// Entry is the result as the context entry it becomes when the batch
	// ends (absent in events of older cores, which applied it at once).
	Entry *EntryInput `json:"entry,omitempty"`
}

type ToolCallAwaiting struct {
	RunID  string `json:"runId"`
	Turn   int    `json:"turn"`
	CallID string `json:"callId"`
	Name   string `json:"name"`
}

type ToolApprovalRequested struct {
	RunID  string `json:"runId"`
	Turn   int    `json:"turn"`
	CallID string `json:"callId"`
	Name   string `json:"name"`
}

type ToolApprovalDecided struct {
	RunID    string `json:"runId"`
	Turn     int    `json:"turn"`
	CallID   string `json:"callId"`
	Approved bool   `json:"approved"`
	Reason   string `json:"reason,omitempty"`
}

type ToolBatchCompleted struct {
	RunID string `json:"runId"`
	Turn  int    `json:"turn"`
}

type ContextEntriesApplied struct {
	BaseRevision int64   `json:"baseRevision"`
	Entries      []Entry `json:"entries"`
}

type ContextEntriesRemoved struct {
	BaseRevision int64    `json:"baseRevision"`
	EntryIDs     []string `json:"entryIds"`
}

type ContextKeysRemoved struct {
	BaseRevision int64    `json:"baseRevision"`
	Keys         []string `json:"keys"`
}
