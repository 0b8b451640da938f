package core

import (
	"encoding/json"
	"fmt"

	"github.com/cairn-agents/cairn/content"
)

// Checkpoint format of the reducer state. A checkpoint plus the events after
// its head rebuilds exactly the state a full replay does; hosts use it to
// avoid replaying a long log (views, workflow rehydration).
const (
	CheckpointFormat  = "cairn.reducer-state"
	CheckpointVersion = 1
)

type checkpoint struct {
	checkpointHead
	Entries []Entry    `json:"entries"`
	Runs    []runState `json:"runs"`
}

// checkpointHead is the state apart from its entries and runs: all of a
// version 2 index but the chunks it names.
type checkpointHead struct {
	Format         string        `json:"format"`
	Version        int           `json:"version"`
	SessionID      string        `json:"sessionId"`
	Parent         *ParentRef    `json:"parent,omitempty"`
	Head           int64         `json:"head"`
	Opened         bool          `json:"opened"`
	Closed         bool          `json:"closed"`
	Config         SessionConfig `json:"config"`
	ConfigRevision int64         `json:"configRevision"`
	Revision       int64         `json:"revision"`
	NextEntry      int64         `json:"nextEntry"`
	Active         string        `json:"active,omitempty"`
	Queue          []string      `json:"queue"`
	// Compaction and RunsSinceCompaction were added within version 1:
	// older checkpoints decode with no pending compaction and a zero count.
	Compaction          *PendingCompaction `json:"compaction,omitempty"`
	RunsSinceCompaction int                `json:"runsSinceCompaction,omitempty"`
	// LastSegments was added within version 2: an older checkpoint decodes
	// without it, and the next request's segment list is stored whole.
	LastSegments *content.ContentRef `json:"lastSegments,omitempty"`
	// PendingConfig was added within version 2: absent means none.
	PendingConfig *SessionConfigChangeRequested `json:"pendingConfig,omitempty"`
}

type runState struct {
	ID               string                `json:"id"`
	SubmissionID     string                `json:"submissionId,omitempty"`
	InputFingerprint string                `json:"inputFingerprint"`
	Status           string                `json:"status"`
	Input            []InputItem           `json:"input"`
	Activations      []EntryInput          `json:"activations,omitempty"`
	InputConsumed    bool                  `json:"inputConsumed"`
	Steering         []RunSteeringAccepted `json:"steering,omitempty"`
	Turns            int                   `json:"turns"`
	Turn             *turnState            `json:"turn,omitempty"`
	CancelRequested  bool                  `json:"cancelRequested,omitempty"`
	Output           *content.ContentRef   `json:"output,omitempty"`
	Error            *Failure              `json:"error,omitempty"`
	AcceptedSeq      int64                 `json:"acceptedSeq"`
	EndedSeq         int64                 `json:"endedSeq,omitempty"`

	// The transcription fields were added within version 1; absent means
	// no transcription was requested.
	TranscriptionRequested bool         `json:"transcriptionRequested,omitempty"`
	Transcripts            []Transcript `json:"transcripts,omitempty"`
	// Added within version 1; absent means the run retries none.
	RetryOf string `json:"retryOf,omitempty"`
}

type turnState struct {
	N               int                 `json:"n"`
	Planned         bool                `json:"planned"`
	ContextRevision int64               `json:"contextRevision"`
	Fingerprint     string              `json:"fingerprint"`
	GenRequested    bool                `json:"genRequested"`
	GenCompleted    bool                `json:"genCompleted"`
	Calls           []callState         `json:"calls,omitempty"`
	BatchStarted    bool                `json:"batchStarted"`
	BatchCompleted  bool                `json:"batchCompleted"`
	Completed       bool                `json:"completed"`
	Outcome         string              `json:"outcome,omitempty"`
	LastMessage     *content.ContentRef `json:"lastMessage,omitempty"`
}

type callState struct {
	ToolCall
	Started         bool        `json:"started"`
	Awaiting        bool        `json:"awaiting,omitempty"`
	AwaitingSinceMs int64       `json:"awaitingSinceMs,omitempty"`
	Approval        string      `json:"approval,omitempty"`
	Completed       bool        `json:"completed"`
	Status          string      `json:"status,omitempty"`
	Result          *EntryInput `json:"result,omitempty"`
}

// EncodeCheckpoint returns the state as canonical JSON, in one piece
// (version 1). Hosts store the chunked form, EncodeCheckpointParts; this
// one names a state's exact content in tests and crosses into workflow code.
func EncodeCheckpoint(s *State) ([]byte, error) {
	return content.MarshalCanonical(s.checkpoint())
}

// checkpoint returns the state as a version 1 checkpoint.
func (s *State) checkpoint() checkpoint {
	cp := checkpoint{checkpointHead: s.checkpointHead(), Entries: s.entries}
	if cp.Entries == nil {
		cp.Entries = []Entry{}
	}
	cp.Runs = make([]runState, 0, len(s.runOrder))
	for _, id := range s.runOrder {
		cp.Runs = append(cp.Runs, s.runs[id].record())
	}
	return cp
}

// checkpointHead is the state apart from its entries and runs.
func (s *State) checkpointHead() checkpointHead {
	h := checkpointHead{
		Format: CheckpointFormat, Version: CheckpointVersion,
		SessionID: s.SessionID, Parent: s.Parent, Head: s.Head, Opened: s.Opened, Closed: s.Closed,
		Config: s.Config, ConfigRevision: s.ConfigRevision, Revision: s.Revision,
		NextEntry: s.nextEntry, Active: s.Active, Queue: s.Queue,
		Compaction: s.Compaction, RunsSinceCompaction: s.runsSinceCompaction,
		LastSegments: s.LastSegments, PendingConfig: s.PendingConfig,
	}
	if h.Queue == nil {
		h.Queue = []string{}
	}
	return h
}

// record is the run as a checkpoint holds it.
func (r *Run) record() runState {
	rs := runState{
		ID: r.ID, SubmissionID: r.SubmissionID, InputFingerprint: r.InputFingerprint, Status: r.Status,
		Input: r.Input, Activations: r.Activations, InputConsumed: r.InputConsumed, Steering: r.Steering, Turns: r.Turns,
		CancelRequested: r.CancelRequested, Output: r.Output, Error: r.Error, AcceptedSeq: r.AcceptedSeq, EndedSeq: r.EndedSeq,
		TranscriptionRequested: r.TranscriptionRequested, Transcripts: r.Transcripts, RetryOf: r.RetryOf,
	}
	if t := r.Turn; t != nil {
		ts := &turnState{N: t.N, Planned: t.Planned, ContextRevision: t.ContextRevision, Fingerprint: t.Fingerprint,
			GenRequested: t.GenRequested, GenCompleted: t.GenCompleted, BatchStarted: t.BatchStarted,
			BatchCompleted: t.BatchCompleted, Completed: t.Completed, Outcome: t.Outcome, LastMessage: t.LastMessage}
		for _, c := range t.Calls {
			ts.Calls = append(ts.Calls, callState{ToolCall: c.ToolCall, Started: c.Started, Awaiting: c.Awaiting, AwaitingSinceMs: c.AwaitingSinceMs, Approval: c.Approval, Completed: c.Completed, Status: c.Status, Result: c.Result})
		}
		rs.Turn = ts
	}
	return rs
}

// CheckpointError says a checkpoint cannot be used; the host falls back to
// a full replay.
type CheckpointError struct{ Reason string }

func (e *CheckpointError) Error() string { return "unusable checkpoint: " + e.Reason }

// DecodeCheckpoint rebuilds a state from a checkpoint that holds all of
// it (version 1), validating it. A chunked one (version 2) needs
// DecodeCheckpointParts.
func DecodeCheckpoint(data []byte) (*State, error) { return DecodeCheckpointParts(data, nil) }

// decodeWhole decodes a version 1 checkpoint.
func decodeWhole(data []byte) (*State, error) {
	var cp checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return nil, &CheckpointError{"not JSON: " + err.Error()}
	}
	if cp.Format != CheckpointFormat || cp.Version != CheckpointVersion {
		return nil, &CheckpointError{fmt.Sprintf("format %q version %d, want %q version %d, %d or %d", cp.Format, cp.Version, CheckpointFormat, CheckpointVersion, CheckpointChunkedVersion, CheckpointNestedVersion)}
	}
	return cp.state()
}

// state rebuilds and validates the state a checkpoint holds.
func (cp checkpoint) state() (*State, error) {
	s := NewState()
	s.SessionID, s.Parent, s.Head, s.Opened, s.Closed = cp.SessionID, cp.Parent, cp.Head, cp.Opened, cp.Closed
	s.Config, s.ConfigRevision, s.Revision, s.nextEntry = cp.Config, cp.ConfigRevision, cp.Revision, cp.NextEntry
	s.entries, s.Active, s.Queue = cp.Entries, cp.Active, cp.Queue
	s.Compaction, s.runsSinceCompaction = cp.Compaction, cp.RunsSinceCompaction
	s.LastSegments, s.PendingConfig = cp.LastSegments, cp.PendingConfig
	if len(s.Queue) == 0 {
		s.Queue = nil
	}
	if len(s.entries) == 0 {
		s.entries = nil
	}
	s.recount()
	s.putInRequestOrder() // a checkpoint written before the entries were kept in it
	for _, e := range s.entries {
		if _, dup := s.entryIDs[e.ID]; dup || e.ID == "" {
			return nil, &CheckpointError{"duplicate or empty entry id " + e.ID}
		}
		s.entryIDs[e.ID] = struct{}{}
	}
	for _, rs := range cp.Runs {
		if rs.ID == "" || s.runs[rs.ID] != nil {
			return nil, &CheckpointError{"duplicate or empty run id " + rs.ID}
		}
		r := &Run{ID: rs.ID, SubmissionID: rs.SubmissionID, InputFingerprint: rs.InputFingerprint, Status: rs.Status,
			Input: rs.Input, Activations: rs.Activations, InputConsumed: rs.InputConsumed, Steering: rs.Steering, Turns: rs.Turns,
			CancelRequested: rs.CancelRequested, Output: rs.Output, Error: rs.Error, AcceptedSeq: rs.AcceptedSeq, EndedSeq: rs.EndedSeq,
			TranscriptionRequested: rs.TranscriptionRequested, Transcripts: rs.Transcripts, RetryOf: rs.RetryOf}
		if ts := rs.Turn; ts != nil {
			t := &Turn{N: ts.N, Planned: ts.Planned, ContextRevision: ts.ContextRevision, Fingerprint: ts.Fingerprint,
				GenRequested: ts.GenRequested, GenCompleted: ts.GenCompleted, BatchStarted: ts.BatchStarted,
				BatchCompleted: ts.BatchCompleted, Completed: ts.Completed, Outcome: ts.Outcome, LastMessage: ts.LastMessage}
			for _, c := range ts.Calls {
				t.Calls = append(t.Calls, &Call{ToolCall: c.ToolCall, Started: c.Started, Awaiting: c.Awaiting, AwaitingSinceMs: c.AwaitingSinceMs, Approval: c.Approval, Completed: c.Completed, Status: c.Status, Result: c.Result})
			}
			r.Turn = t
		}
		if r.ended() {
			r.settle() // a checkpoint written before runs settled
		}
		s.runs[r.ID] = r
		s.runOrder = append(s.runOrder, r.ID)
		if r.SubmissionID != "" {
			s.submissions[r.SubmissionID] = r.ID
		}
	}
	if err := s.validate(); err != nil {
		return nil, &CheckpointError{err.Error()}
	}
	return s, nil
}

// validate checks the invariants a replayed state always has.
func (s *State) validate() error {
	if s.Head < 0 || s.Revision < 0 || s.nextEntry < int64(len(s.entries)) {
		return fmt.Errorf("negative head or revision, or entry counter behind the entries")
	}
	if s.Head > 0 && !s.Opened {
		return fmt.Errorf("events without an opened session")
	}
	if s.Active != "" {
		if r := s.runs[s.Active]; r == nil || r.Status != StatusRunning {
			return fmt.Errorf("active run %s is not running", s.Active)
		}
	}
	seen := map[string]bool{}
	for _, id := range s.Queue {
		if r := s.runs[id]; r == nil || r.Status != StatusQueued || seen[id] {
			return fmt.Errorf("queued run %s is not queued", id)
		}
		seen[id] = true
	}
	// runOrder, not the map: the core never depends on map order, and
	// decoding a checkpoint runs in workflow code. DecodeCheckpoint builds
	// both from the same list, so they hold the same ids.
	if len(s.runOrder) != len(s.runs) {
		return fmt.Errorf("%d runs in order, %d by id", len(s.runOrder), len(s.runs))
	}
	for _, id := range s.runOrder {
		r := s.runs[id]
		if r == nil {
			return fmt.Errorf("run %s is in order but not by id", id)
		}
		if (r.Status == StatusRunning) != (id == s.Active) {
			return fmt.Errorf("run %s is %s but the active run is %q", id, r.Status, s.Active)
		}
	}
	return nil
}
