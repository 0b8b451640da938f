package core

import (
	"encoding/json"

	"github.com/cairn-agents/cairn/content"
)

// Event kinds. Each is versioned; version 1 is pinned by core/testdata fixtures.
const (
	KindSessionOpened        = "session.opened"
	KindSessionConfigChanged = "session.config_changed"
	KindSessionClosed        = "session.closed"
	// KindSessionConfigChangeRequested records a config change asked for
	// while a run was active or queued; the planner applies it (as
	// session.config_changed) at the next idle boundary.
	KindSessionConfigChangeRequested = "session.config_change_requested"
	// KindSessionWarning records something a person should know that
	// changed nothing in the session: an MCP server that did not list its
	// tools at the refresh boundary, so the session kept its last list.
	KindSessionWarning = "session.warning"

	KindRunAccepted         = "run.accepted"
	KindRunStarted          = "run.started"
	KindRunSteeringAccepted = "run.steering_accepted"
	KindRunCancelRequested  = "run.cancel_requested"
	KindRunCompleted        = "run.completed"
	KindRunFailed           = "run.failed"
	KindRunCancelled        = "run.cancelled"
	// KindRunTranscriptionRequested asks for the run's audio input to be
	// transcribed before its first turn; KindRunTranscriptionCompleted
	// records the transcripts (a failure fails the run instead).
	KindRunTranscriptionRequested = "run.transcription_requested"
	KindRunTranscriptionCompleted = "run.transcription_completed"

	KindTurnStarted             = "turn.started"
	KindTurnPlanned             = "turn.planned"
	KindTurnGenerationRequested = "turn.generation_requested"
	KindTurnGenerationCompleted = "turn.generation_completed"
	KindTurnCompleted           = "turn.completed"

	KindToolBatchStarted   = "tools.batch_started"
	KindToolCallStarted    = "tools.call_started"
	KindToolCallCompleted  = "tools.call_completed"
	KindToolBatchCompleted = "tools.batch_completed"
	// KindToolCallAwaiting: a started call waits for its result from the
	// client (a client tool): the host does not run it.
	KindToolCallAwaiting = "tools.call_awaiting"
	// KindToolApprovalRequested: a started call waits for a person's
	// decision before it runs; KindToolApprovalDecided records it.
	KindToolApprovalRequested = "tools.approval_requested"
	KindToolApprovalDecided   = "tools.approval_decided"

	KindContextEntriesApplied = "context.entries_applied"
	KindContextEntriesRemoved = "context.entries_removed"
	KindContextKeysRemoved    = "context.keys_removed"
	// KindContextCompacted replaces entries with their compacted account
	// (or, for provider-triggered compaction, prunes them).
	KindContextCompacted = "context.compacted"

	KindCompactionRequested = "compaction.requested"
	KindCompactionCompleted = "compaction.completed"
	KindCompactionFailed    = "compaction.failed"
)

// EventVersion is the payload version every kind is written at today.
const EventVersion = 1

// API kinds a session can speak. A session's API kind is fixed at creation.
const (
	APIChatCompletions   = "chat_completions"
	APIOpenAIResponses   = "openai_responses"
	APIAnthropicMessages = "anthropic_messages"
)

// ModelSelection is the whole durable model choice. Endpoint, credentials and
// headers are resolved outside the core just before provider I/O.
type ModelSelection struct {
	ProviderID string `json:"providerId"`
	APIKind    string `json:"apiKind"`
	Model      string `json:"model"`
}

// SessionConfig is what a session was opened with (and later changed to).
type SessionConfig struct {
	Model ModelSelection `json:"model"`
	// Tools are granted tool names, in the order they are presented to the model.
	Tools []string `json:"tools,omitempty"`
	// ClientTools define the granted tools the client runs (see
	// ClientTool); each is also named in Tools, which orders them all.
	ClientTools []ClientTool `json:"clientTools,omitempty"`
	// MCPTools are the tools the granted MCP servers listed at the last
	// refresh boundary, each server's in its order; MCPCatalog is the blob
	// of their definitions (MediaMCPCatalog). The host records both; a
	// client never sets them.
	MCPTools   []MCPTool           `json:"mcpTools,omitempty"`
	MCPCatalog *content.ContentRef `json:"mcpCatalog,omitempty"`
	// Approvals are the granted tools whose calls wait for a person's
	// decision before they run, sorted by tool. (A list, not a map: the
	// core ranges over nothing whose order Go leaves open.)
	Approvals []ToolApproval `json:"approvals,omitempty"`
	// MaxTurns bounds the turns of one run; 0 means DefaultMaxTurns.
	MaxTurns int `json:"maxTurns,omitempty"`
	// Links mount workspaces (resolved to their current head at each
	// operation) and snapshots (pinned, read-only) into the session's file
	// tree, at mount paths that do not overlap.
	Links []Link `json:"links,omitempty"`
	// Compaction is the compaction policy; nil means disabled.
	Compaction *Compaction `json:"compaction,omitempty"`
	// Transcription is the model that turns audio input into text; nil
	// means audio input is refused.
	Transcription *Transcription `json:"transcription,omitempty"`
	// ProviderParams are the API kind's request parameters (temperature,
	// reasoning effort, cache TTL, …) as canonical JSON. The core keeps them
	// opaque; the API kind's adapter validates them before admission.
	ProviderParams json.RawMessage `json:"providerParams,omitempty"`
}

// Compaction modes.
const (
	CompactionDisabled = "disabled"
	// CompactionProviderTriggered asks the provider to compact inside
	// ordinary generation requests (OpenAI Responses context_management).
	CompactionProviderTriggered = "provider_triggered"
	// CompactionProviderStandalone runs compaction as separate work between
	// runs: the Responses compact endpoint, or a summarization request.
	CompactionProviderStandalone = "provider_standalone"
)

// Compaction is a session's compaction policy.
type Compaction struct {
	Mode string `json:"mode"`
	// ThresholdTokens, when positive, triggers compaction automatically once
	// the token estimates of the compactable entries sum to at least this.
	// For provider_triggered it is the threshold the provider is given.
	ThresholdTokens int64 `json:"thresholdTokens,omitempty"`
	// TargetTokens guides the length of a summary and bounds its output
	// (summary routes only; the Responses compact endpoint ignores it).
	TargetTokens int64 `json:"targetTokens,omitempty"`
}

// Run statuses.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Tool call result statuses.
const (
	CallOK          = "ok"
	CallError       = "error"       // the tool ran and reported an error to the model
	CallUnavailable = "unavailable" // no such tool is granted or registered
	CallFailed      = "failed"      // the runtime failed to run it
	CallCancelled   = "cancelled"
)

// Failure says why a run or generation failed. Message is safe to show and
// never contains secrets; Ref may point at a longer stored explanation.
type Failure struct {
	Kind    string              `json:"kind"`
	Message string              `json:"message"`
	Ref     *content.ContentRef `json:"ref,omitempty"`
}

// Usage is what the provider reported for one generation.
type Usage struct {
	InputTokens       int64 `json:"inputTokens,omitempty"`
	OutputTokens      int64 `json:"outputTokens,omitempty"`
	CachedInputTokens int64 `json:"cachedInputTokens,omitempty"`
	CacheWriteTokens  int64 `json:"cacheWriteTokens,omitempty"`
	ReasoningTokens   int64 `json:"reasoningTokens,omitempty"`
}

// ToolCall is the fact the core keeps about one model-requested call.
type ToolCall struct {
	CallID    string             `json:"callId"`
	Name      string             `json:"name"`
	Arguments content.ContentRef `json:"arguments"`
}

// DefaultMaxTurns bounds the turns of one run when the config sets none, so a
// model that keeps calling tools cannot loop forever.
const DefaultMaxTurns = 50

// Link mounts one workspace or one snapshot (a manifest digest) at an
// absolute mount path; exactly one of Workspace and Snapshot is set.
type Link struct {
	Mount     string `json:"mount"`
	Workspace string `json:"workspace,omitempty"`
	Snapshot  string `json:"snapshot,omitempty"`
}
