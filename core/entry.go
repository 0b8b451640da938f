package core

import "github.com/cairn-agents/cairn/content"

// Entry kinds of the active context.
const (
	EntryMessage         = "message"
	EntryInstructions    = "instructions"
	EntryCatalog         = "catalog"
	EntrySkillActivation = "skill_activation"
	EntryToolCall        = "tool_call"
	EntryToolResult      = "tool_result"
	EntryReasoning       = "reasoning"
	EntryProviderOpaque  = "provider_opaque"
	EntrySummary         = "summary"
	// EntryCompaction is provider-native compaction material (an OpenAI
	// Responses compaction item) that stands in for the conversation it
	// replaced; only its API kind can read it.
	EntryCompaction = "compaction"
)

// Entry sources: who inserted the entry.
const (
	SourceUser    = "user"    // a run input or steering message
	SourceAPI     = "api"     // session/context/append
	SourceModel   = "model"   // generation output
	SourceTool    = "tool"    // tool result
	SourceRuntime = "runtime" // runtime-authored (cancelled, unavailable, …)
)

// Roles of message entries.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Token estimate qualities.
const (
	EstimateHeuristic = "heuristic" // computed from byte length; see runtime/estimate.go
	EstimateMeasured  = "measured"  // reported by the provider for this output
)

// InstructionKeyPrefix is the namespace every instruction key lives in.
const InstructionKeyPrefix = "instructions."

// TokenEstimate is the accounting attached to every entry the runtime writes.
type TokenEstimate struct {
	Tokens  int64  `json:"tokens"`
	Quality string `json:"quality"`
}

// MaxPreviewBytes bounds an entry's preview; it is display only, never model input.
const MaxPreviewBytes = 280

// Entry is one item of the active context: a ContentRef plus facts about its use.
type Entry struct {
	ID            string              `json:"entryId"`
	Key           string              `json:"key,omitempty"`
	Kind          string              `json:"kind"`
	Role          string              `json:"role,omitempty"`
	Source        string              `json:"source"`
	Content       content.ContentRef  `json:"content"`
	TokenEstimate TokenEstimate       `json:"tokenEstimate"`
	Preview       string              `json:"preview,omitempty"`
	Origin        string              `json:"origin,omitempty"`
	ProvenanceRef *content.ContentRef `json:"provenanceRef,omitempty"`
	Supersedes    string              `json:"supersedes,omitempty"`
	// CallID links tool_call and tool_result entries; ToolName names the tool.
	CallID   string `json:"callId,omitempty"`
	ToolName string `json:"toolName,omitempty"`
	// RunID is the run that inserted the entry, when one did.
	RunID string `json:"runId,omitempty"`
	// Scope is ScopeRun for an entry that leaves context when its run
	// ends (a run-scoped skill activation); empty otherwise.
	Scope string `json:"scope,omitempty"`
}

// ScopeRun marks an entry that expires with the run that inserted it.
const ScopeRun = "run"

// Key namespaces of the entries the runtime derives from linked files and
// explicit activations.
const (
	CatalogKeyPrefix = "catalog."
	SkillKeyPrefix   = "skill."
)

// EntryInput is an entry before the core gives it an id.
// Its JSON form (compact, empty fields omitted) is what crosses the Temporal
// activity boundary inside results.
type EntryInput struct {
	Key           string              `json:"key,omitempty"`
	Kind          string              `json:"kind"`
	Role          string              `json:"role,omitempty"`
	Content       content.ContentRef  `json:"content"`
	TokenEstimate TokenEstimate       `json:"tokenEstimate"`
	Preview       string              `json:"preview,omitempty"`
	Origin        string              `json:"origin,omitempty"`
	ProvenanceRef *content.ContentRef `json:"provenanceRef,omitempty"`
	CallID        string              `json:"callId,omitempty"`
	ToolName      string              `json:"toolName,omitempty"`
	Scope         string              `json:"scope,omitempty"`
}
