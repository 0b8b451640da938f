package temporal

import (
	"encoding/json"
	"fmt"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
)

// Names registered with Temporal.
const (
	WorkflowName    = "cairn.session"
	UpdateSubmit    = "submit"
	QueryStatus     = "status"
	DefaultQueue    = "cairn-sessions"
	rejectionPrefix = "rejection:"
)

// WorkflowID is the id of a session's workflow.
func WorkflowID(universe, sessionID string) string { return universe + "/" + sessionID }

// SessionArgs are the workflow's start arguments: ids and a little config.
type SessionArgs struct {
	Universe  string `json:"universe"`
	SessionID string `json:"sessionId"`
	// HeartbeatTimeoutMs bounds how long a dead worker holds a model call, a
	// tool call or a rehydration before another worker retries it (default
	// 30 s). Appends run as local activities, retried with the workflow task.
	HeartbeatTimeoutMs int64 `json:"heartbeatTimeoutMs,omitempty"`
	// ContinueAsNewAfter is the history length past which an idle workflow
	// continues as new (default 2,000 events).
	ContinueAsNewAfter int `json:"continueAsNewAfter,omitempty"`
	// IdleCheckpointEvery is the fewest events since the last checkpoint for
	// which an idle session is checkpointed (default
	// runtime.IdleCheckpointEvery).
	IdleCheckpointEvery int64 `json:"idleCheckpointEvery,omitempty"`
}

// Command is a client command as it crosses the update boundary: exactly
// one field is set.
type Command struct {
	OpenSession   *core.OpenSession       `json:"openSession,omitempty"`
	ChangeConfig  *core.ChangeConfig      `json:"changeConfig,omitempty"`
	CloseSession  *core.CloseSession      `json:"closeSession,omitempty"`
	StartRun      *core.StartRun          `json:"startRun,omitempty"`
	Steer         *core.Steer             `json:"steer,omitempty"`
	CancelRun     *core.CancelRun         `json:"cancelRun,omitempty"`
	AppendContext *core.AppendContext     `json:"appendContext,omitempty"`
	RemoveContext *core.RemoveContext     `json:"removeContext,omitempty"`
	Compact       *core.RequestCompaction `json:"compact,omitempty"`
	ToolOutput    *core.SubmitToolOutput  `json:"toolOutput,omitempty"`
	Decision      *core.DecideApproval    `json:"decision,omitempty"`
}

// WrapCommand puts a core command into its wire form.
func WrapCommand(cmd core.Command) (Command, error) {
	switch c := cmd.(type) {
	case core.OpenSession:
		return Command{OpenSession: &c}, nil
	case core.ChangeConfig:
		return Command{ChangeConfig: &c}, nil
	case core.CloseSession:
		return Command{CloseSession: &c}, nil
	case core.StartRun:
		return Command{StartRun: &c}, nil
	case core.Steer:
		return Command{Steer: &c}, nil
	case core.CancelRun:
		return Command{CancelRun: &c}, nil
	case core.AppendContext:
		return Command{AppendContext: &c}, nil
	case core.RemoveContext:
		return Command{RemoveContext: &c}, nil
	case core.RequestCompaction:
		return Command{Compact: &c}, nil
	case core.SubmitToolOutput:
		return Command{ToolOutput: &c}, nil
	case core.DecideApproval:
		return Command{Decision: &c}, nil
	}
	return Command{}, fmt.Errorf("command %T cannot be submitted by a client", cmd)
}

// Unwrap returns the core command.
func (c Command) Unwrap() (core.Command, error) {
	var out []core.Command
	if c.OpenSession != nil {
		out = append(out, *c.OpenSession)
	}
	if c.ChangeConfig != nil {
		out = append(out, *c.ChangeConfig)
	}
	if c.CloseSession != nil {
		out = append(out, *c.CloseSession)
	}
	if c.StartRun != nil {
		out = append(out, *c.StartRun)
	}
	if c.Steer != nil {
		out = append(out, *c.Steer)
	}
	if c.CancelRun != nil {
		out = append(out, *c.CancelRun)
	}
	if c.AppendContext != nil {
		out = append(out, *c.AppendContext)
	}
	if c.RemoveContext != nil {
		out = append(out, *c.RemoveContext)
	}
	if c.Compact != nil {
		out = append(out, *c.Compact)
	}
	if c.ToolOutput != nil {
		out = append(out, *c.ToolOutput)
	}
	if c.Decision != nil {
		out = append(out, *c.Decision)
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("a command must set exactly one field, got %d", len(out))
	}
	return out[0], nil
}

// SubmitResult is an admitted command's outcome.
type SubmitResult struct {
	RunID     string   `json:"runId,omitempty"`
	Status    string   `json:"status,omitempty"`
	Duplicate bool     `json:"duplicate,omitempty"`
	Revision  int64    `json:"revision,omitempty"`
	EntryIDs  []string `json:"entryIds,omitempty"`
	// ConfigPending: a config change waits for the next idle boundary.
	ConfigPending bool `json:"configPending,omitempty"`
}

// Status is what the status query answers, from the workflow's state.
type Status struct {
	SessionID       string              `json:"sessionId"`
	Parent          *core.ParentRef     `json:"parent,omitempty"` // a sub-agent's session
	Closed          bool                `json:"closed"`
	Model           core.ModelSelection `json:"model"`
	Tools           []string            `json:"tools,omitempty"`
	ClientTools     []core.ClientTool   `json:"clientTools,omitempty"`
	Approvals       []core.ToolApproval `json:"approvals,omitempty"`
	Links           []core.Link         `json:"links,omitempty"`
	ContextRevision int64               `json:"contextRevision"`
	ConfigRevision  int64               `json:"configRevision"`
	Head            int64               `json:"head"`
	ActiveRun       string              `json:"activeRun,omitempty"`
	// ActiveRunStatus is the active run's status as clients see it
	// (running, or awaiting_tools while a call waits for the client).
	ActiveRunStatus string   `json:"activeRunStatus,omitempty"`
	Queued          []string `json:"queued"`
	// Compaction is the pending standalone compaction (without its entry ids).
	Compaction *core.PendingCompaction `json:"compaction,omitempty"`
	// AsOfSeq is set when no worker answered and the status was rebuilt
	// from the store: it is the session's state as of that event.
	AsOfSeq int64 `json:"asOfSeq,omitempty"`
}

// statusOf is the status of a session's state, for the workflow's query and
// the gateway's answer from the store. The pending compaction is reported
// without its entry ids (they can be many).
func statusOf(st *core.State) Status {
	out := Status{SessionID: st.SessionID, Parent: st.Parent, Closed: st.Closed, Model: st.Config.Model, Tools: st.Config.Tools, ClientTools: st.Config.ClientTools, Approvals: st.Config.Approvals,
		Links: st.Config.Links, ContextRevision: st.Revision, ConfigRevision: st.ConfigRevision, Head: st.Head, ActiveRun: st.Active, Queued: append([]string{}, st.Queue...)}
	if r := st.ActiveRun(); r != nil {
		out.ActiveRunStatus = r.ShownStatus()
	}
	if p := st.Compaction; p != nil {
		c := *p
		c.EntryIDs = nil
		out.Compaction = &c
	}
	return out
}

// RefreshIn names the links whose files a refresh reads.
type RefreshIn struct {
	Universe string      `json:"universe"`
	Links    []core.Link `json:"links,omitempty"`
	// MCPGrants are the session's grants of MCP tools and MCPCatalog its
	// last catalog: names and a ref, never the tools' definitions.
	MCPGrants  []string            `json:"mcpGrants,omitempty"`
	MCPCatalog *content.ContentRef `json:"mcpCatalog,omitempty"`
	// AgentMenu says the session may start sub-agents, and so sees the
	// agent menu (runtime.AgentMenuAllowed).
	AgentMenu bool `json:"agentMenu,omitempty"`
}

// refreshIn is what the Refresh activity needs of a session.
func refreshIn(universe string, sum core.Summary) RefreshIn {
	cfg := sum.Config
	in := RefreshIn{Universe: universe, Links: cfg.Links, MCPCatalog: cfg.MCPCatalog, AgentMenu: runtime.AgentMenuAllowed(cfg, sum.Depth())}
	for _, g := range cfg.Tools {
		if _, _, ok := core.MCPGrant(g); ok {
			in.MCPGrants = append(in.MCPGrants, g)
		}
	}
	return in
}

// RefreshOut is the material derived from the linked files and the MCP
// servers: entries that point at stored instructions and catalogs, and
// the MCP tools' names with the ref of their definitions, never bytes.
type RefreshOut = runtime.Refreshed

// CompactIn names a pending compaction; the activity rebuilds its entries
// from the log at Head, so no conversation crosses into history.
type CompactIn struct {
	Universe        string `json:"universe"`
	SessionID       string `json:"sessionId"`
	Head            int64  `json:"head"`
	CompactionID    string `json:"compactionId"`
	ContextRevision int64  `json:"contextRevision"`
}

// TranscribeIn names a run whose audio input is being transcribed; the
// activity rebuilds the work from the log at Head and reads the audio from
// the store, so no audio bytes cross into history.
type TranscribeIn struct {
	Universe  string `json:"universe"`
	SessionID string `json:"sessionId"`
	Head      int64  `json:"head"`
	RunID     string `json:"runId"`
}

// CheckpointIn names the session state to checkpoint: the state at Head.
type CheckpointIn struct {
	Universe  string `json:"universe"`
	SessionID string `json:"sessionId"`
	Head      int64  `json:"head"`
}

// RehydrateIn names the session whose state to rebuild.
type RehydrateIn struct {
	Universe  string `json:"universe"`
	SessionID string `json:"sessionId"`
}

// RehydrateOut is the session's reducer state as a checkpoint (facts and
// refs, never conversation bytes); empty when the session has no events yet.
// A state of at most RehydrateInline bytes comes whole (Checkpoint); a
// larger one as the index of a chunked checkpoint (Index) whose chunks the
// activity has stored, for the workflow to read in batches
// (ReadCheckpointChunks): no single activity result grows with the
// session's length past Temporal's payload limits.
type RehydrateOut struct {
	Checkpoint json.RawMessage `json:"checkpoint,omitempty"`
	Index      json.RawMessage `json:"index,omitempty"`
}

// RehydrateInline is the largest state Rehydrate returns whole.
const RehydrateInline = 256 << 10

// ReadChunksIn names checkpoint chunks to read.
type ReadChunksIn struct {
	Universe string           `json:"universe"`
	Digests  []content.Digest `json:"digests"`
}

// ReadChunksOut holds the bytes of the first chunks asked for, in order: as
// many as fit in ReadChunksBytes (at least one).
type ReadChunksOut struct {
	Chunks [][]byte `json:"chunks"`
}

// ReadChunksBytes bounds the chunk bytes of one ReadCheckpointChunks result.
const ReadChunksBytes = 1 << 20

// AppendIn are proposals to store after ExpectedHead.
type AppendIn struct {
	Universe     string          `json:"universe"`
	SessionID    string          `json:"sessionId"`
	ExpectedHead int64           `json:"expectedHead"`
	Proposals    []core.Proposal `json:"proposals"`
}

// AppendOut says where the proposals were stored: seqs ExpectedHead+1….
type AppendOut struct {
	Head int64 `json:"head"`
	// ObservedAtMs are the stored events' times when the log already held
	// these proposals, written by a workflow task that was then lost: the
	// same decisions, stamped with that task's clock.
	ObservedAtMs []int64 `json:"observedAtMs,omitempty"`
}

// GenerateIn names a planned turn. The activity rebuilds its context from the
// log at Head and checks it against Fingerprint before calling the provider.
type GenerateIn struct {
	Universe    string `json:"universe"`
	SessionID   string `json:"sessionId"`
	Head        int64  `json:"head"`
	RunID       string `json:"runId"`
	Turn        int    `json:"turn"`
	Fingerprint string `json:"fingerprint"`
}

// ToolIn is one tool call of a turn.
type ToolIn struct {
	Universe  string        `json:"universe"`
	SessionID string        `json:"sessionId"`
	RunID     string        `json:"runId"`
	Turn      int           `json:"turn"`
	Call      core.ToolCall `json:"call"`
	// Links are the session's links at dispatch: a handful of mount paths
	// and names, so the tool resolves files without reading the log.
	Links []core.Link `json:"links,omitempty"`
	// MCP names the MCP tool the call is for; nil for any other tool.
	MCP *core.MCPTool `json:"mcp,omitempty"`
	// Config and Depth are the session's config and its depth among
	// sub-agents, for an agent_run call only.
	Config    *core.SessionConfig `json:"config,omitempty"`
	Depth     int                 `json:"depth,omitempty"`
	AgentSlot int                 `json:"agentSlot,omitempty"`
	// ChildArgs are the session workflow's own start arguments, which a
	// sub-agent's workflow gets too (timeouts, limits); agent_run only.
	ChildArgs *SessionArgs `json:"childArgs,omitempty"`
}
