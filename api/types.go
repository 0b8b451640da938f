package api

import (
	"encoding/json"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// Method names.
const (
	MethodSessionCreate = "session/create"
	MethodSessionRead   = "session/read"
	MethodSessionList   = "session/list"
	MethodRunsStart     = "session/runs/start"
	MethodRunsRead      = "session/runs/read"
	MethodRunsSteer     = "session/runs/steer"
	MethodRunsCancel    = "session/runs/cancel"
	MethodEventsRead    = "session/events/read"
	MethodContextRead   = "session/context/read"
	MethodContextAppend = "session/context/append"
	MethodContextRemove = "session/context/remove"
	MethodBlobsPut      = "blobs/put"
	MethodBlobsRead     = "blobs/read"
)

type CreateSessionParams struct {
	SessionID    string              `json:"sessionId,omitempty"`
	Model        core.ModelSelection `json:"model"`
	Instructions string              `json:"instructions,omitempty"`
	// Tools are the granted tools in the order the model sees them; on the
	// wire ("tools") each is a built-in tool's name or, for the client
	// tools (ClientTools), its definition.
	Tools       []string     `json:"-"`
	ClientTools []ClientTool `json:"-"`
	// Approvals names the tools whose calls wait for a person's decision:
	// {"vfs_write_file": "always"}.
	Approvals map[string]string `json:"approvals,omitempty"`
	MaxTurns  int               `json:"maxTurns,omitempty"`
	// ProviderParams are the API kind's versioned request parameters.
	ProviderParams json.RawMessage `json:"providerParams,omitempty"`
	// Links mount workspaces and snapshots into the session's files.
	Links []LinkParam `json:"links,omitempty"`
	// Compaction is the compaction policy: {mode, thresholdTokens?, targetTokens?}.
	Compaction *core.Compaction `json:"compaction,omitempty"`
	// Transcription is the model that transcribes audio input:
	// {providerId, model}; without it audio input is refused.
	Transcription *core.Transcription `json:"transcription,omitempty"`
}

// LinkParam mounts a workspace ({mount, workspace}) or a snapshot ({mount,
// snapshot}, the ref vfs/snapshots/create returned or its digest string)
// into a session's files.
type LinkParam struct {
	Mount     string    `json:"mount"`
	Workspace string    `json:"workspace,omitempty"`
	Snapshot  *RefParam `json:"snapshot,omitempty"`
}

type CreateSessionResult struct {
	SessionID string `json:"sessionId"`
}

type SessionParams struct {
	SessionID string `json:"sessionId"`
}

type RunSummary struct {
	RunID  string `json:"runId"`
	Status string `json:"status"`
}

type SessionReadResult struct {
	SessionID string              `json:"sessionId"`
	Status    string              `json:"status"`
	Model     core.ModelSelection `json:"model"`
	// Tools and ClientTools are "tools" on the wire, as session/create
	// takes them.
	Tools       []string     `json:"-"`
	ClientTools []ClientTool `json:"-"`
	// Links are the session's mounts, as session/create takes them.
	Links           []LinkParam       `json:"links,omitempty"`
	Approvals       map[string]string `json:"approvals,omitempty"`
	ContextRevision int64             `json:"contextRevision"`
	// ConfigRevision counts the configuration's changes (session/update's
	// expectedRevision).
	ConfigRevision int64        `json:"configRevision"`
	Head           int64        `json:"head"`
	ActiveRun      *RunSummary  `json:"activeRun,omitempty"`
	QueuedRuns     []RunSummary `json:"queuedRuns"`
	// Compaction is the pending standalone compaction, if any.
	Compaction *core.PendingCompaction `json:"compaction,omitempty"`
	Source     *SessionSource          `json:"source,omitempty"` // lineage of a fork or clone
	// Parent is set for a sub-agent's session: the session, run and
	// agent_run call that started it, and its depth.
	Parent *core.ParentRef `json:"parent,omitempty"`
	// AsOfSeq is set when the Temporal gateway answered from the store
	// because no worker answered the status query: the state as of that event.
	AsOfSeq int64 `json:"asOfSeq,omitempty"`
}

type SessionListParams struct {
	Before string `json:"before,omitempty"` // the previous page's cursor (newest first)
	After  string `json:"after,omitempty"`  // a session id: list by id instead
	Limit  int    `json:"limit,omitempty"`
	// ExcludeChildren leaves sub-agents' sessions out of the page (a page
	// may then hold fewer than limit; follow the cursor as usual).
	ExcludeChildren bool `json:"excludeChildren,omitempty"`
	// Query keeps the sessions whose id or title contains it, in any
	// letter case; like ExcludeChildren it filters each page.
	Query string `json:"query,omitempty"`
}

type SessionListResult struct {
	Sessions []core.Lifecycle `json:"sessions"`
	Cursor   string           `json:"cursor,omitempty"` // pass as before for the next page; absent on the last
}

// InputPart is one piece of run input: {type:"text", text} or
// {type:"audio", ref, filename}, ref being the ref object blobs/put returned
// for audio bytes uploaded under an audio/* media type.
type InputPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	Ref      *RefParam `json:"ref,omitempty"`
	Filename string    `json:"filename,omitempty"`
}

type RunStartParams struct {
	SessionID    string      `json:"sessionId"`
	Input        []InputPart `json:"input"`
	SubmissionID string      `json:"submissionId,omitempty"`
	// Skills names skills of the session's linked files to activate for
	// this run only: their bodies enter context with the input and leave
	// it when the run ends.
	Skills []string `json:"skills,omitempty"`
}

type RunStartResult struct {
	RunID  string `json:"runId"`
	Status string `json:"status"`
}

type RunParams struct {
	SessionID string `json:"sessionId"`
	RunID     string `json:"runId"`
}

// RunOutput is a run's terminal output: its ref and projected text.
type RunOutput struct {
	Ref content.ContentRef `json:"ref"`
	// Text is the full visible text; absent for media, which has none.
	Text *string `json:"text,omitempty"`
	// Refusal says Text is the model's refusal: the run completed with
	// a message whose only visible part is a refusal.
	Refusal bool `json:"refusal,omitempty"`
}

type RunReadResult struct {
	RunID  string        `json:"runId"`
	Status string        `json:"status"`
	Turns  int           `json:"turns"`
	Output *RunOutput    `json:"output,omitempty"`
	Error  *core.Failure `json:"error,omitempty"`
	// RetryOf is the failed run this run goes on from (session/runs/retry).
	RetryOf string `json:"retryOf,omitempty"`
}

type SteerParams struct {
	SessionID string      `json:"sessionId"`
	Input     []InputPart `json:"input"`
}

type SteerResult struct {
	RunID      string `json:"runId"`
	SteeringID string `json:"steeringId"`
}

type EventsReadParams struct {
	SessionID string `json:"sessionId"`
	After     int64  `json:"after,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	WaitMs    int64  `json:"waitMs,omitempty"`
}

type EventView struct {
	Seq          int64           `json:"seq"`
	Kind         string          `json:"kind"`
	ObservedAtMs int64           `json:"observedAtMs"`
	Joins        []string        `json:"joins,omitempty"`
	Payload      json.RawMessage `json:"payload"`
}

type EventsReadResult struct {
	Events []EventView `json:"events"`
	Head   int64       `json:"head"`
}

// ContextReadResult is one page of the context at a revision. Cursor, set
// while more entries follow, is after for the next page; a page of another
// revision is of a context that changed meanwhile.
type ContextReadResult struct {
	Revision int64        `json:"revision"`
	Entries  []core.Entry `json:"entries"`
	Cursor   string       `json:"cursor,omitempty"`
}

// ContextAppendParams append one entry: its content is either text, stored
// by the call, or ref, an existing text blob of the universe (e.g. a file
// uploaded with blobs/put), admitted without re-sending its bytes. A ref
// given as a digest string is read as text/plain; charset=utf-8.
type ContextAppendParams struct {
	SessionID        string    `json:"sessionId"`
	Key              string    `json:"key,omitempty"`
	Kind             string    `json:"kind"`
	Text             string    `json:"text,omitempty"`
	Ref              *RefParam `json:"ref,omitempty"`
	ExpectedRevision *int64    `json:"expectedRevision,omitempty"`
}

type ContextAppendResult struct {
	Revision int64  `json:"revision"`
	EntryID  string `json:"entryId"`
}

type ContextRemoveParams struct {
	SessionID        string `json:"sessionId"`
	Key              string `json:"key"`
	ExpectedRevision *int64 `json:"expectedRevision,omitempty"`
}

type ContextRemoveResult struct {
	Revision int64 `json:"revision"`
}

type BlobPutParams struct {
	Data      []byte `json:"data"` // base64 in JSON
	MediaType string `json:"mediaType,omitempty"`
}

type BlobPutResult struct {
	Ref content.ContentRef `json:"ref"`
}

// BlobReadParams read a blob, or the part of it from Offset on, at most
// Length bytes (without Length, to the end).
type BlobReadParams struct {
	Ref    RefParam `json:"ref"`
	Offset int64    `json:"offset,omitempty"`
	Length *int64   `json:"length,omitempty"`
}

// BlobReadResult is the bytes read and the blob's whole size.
type BlobReadResult struct {
	Data []byte `json:"data"`
	Size int64  `json:"size"`
}

// VisibleText is the output's text, or "" for media.
func (o *RunOutput) VisibleText() string {
	if o == nil || o.Text == nil {
		return ""
	}
	return *o.Text
}
