package core

import (
	"github.com/cairn-agents/cairn/content"
)

// State is the reducer state of one session, derived from its events alone.
// Maps are used only for lookup; everything emitted is built from slices.
type State struct {
	SessionID      string
	Parent         *ParentRef // a sub-agent's session: where it was started
	Head           int64
	Opened         bool
	Closed         bool
	Config         SessionConfig
	ConfigRevision int64

	// Revision is the active context revision; every context event bumps it.
	Revision int64
	// entries are in recorded order; Context() puts instructions first.
	entries  []Entry
	entryIDs map[string]struct{} // ids of entries, for duplicate checks
	// instructions, runScoped and managed count the entries that are
	// instructions, expire with their run (ScopeRun) and carry a key a
	// refresh manages (RefreshManaged), so whether they are in request
	// order, and which a run's end or a refresh removes, is known without
	// reading every entry of a long session's context (State.count).
	instructions, runScoped, managed int
	nextEntry                        int64

	runs     map[string]*Run
	runOrder []string
	// endedRunEdits counts the events applied to runs that had ended
	// (none, as the reducer goes): while it stands, a checkpoint memo's
	// ended runs are as it remembers them (EncodeCheckpointParts).
	endedRunEdits uint64
	Active        string   // id of the active run, "" if none
	Queue         []string // queued run ids, FIFO
	submissions   map[string]string

	// Compaction is the pending standalone compaction, if any.
	Compaction *PendingCompaction
	// PendingConfig is a config change waiting for the next idle boundary.
	PendingConfig *SessionConfigChangeRequested
	// runsSinceCompaction counts runs that took a turn since the last
	// compaction ended; the threshold trigger waits for one.
	runsSinceCompaction int

	// LastSegments is the stored segment list of the session's last
	// request that recorded one (CacheFacts.Segments). The next request's
	// list is stored as a delta on it, so what is stored depends on the
	// log alone, not on what an executor remembers.
	LastSegments *content.ContentRef

	// resultsPerCall: apply each tool result as its call completes (see
	// ApplyResultsPerCall). A host's choice, never in a checkpoint.
	resultsPerCall bool
}

// Run is the reducer's view of one run.
type Run struct {
	ID               string
	SubmissionID     string
	InputFingerprint string
	Status           string
	Input            []InputItem
	Activations      []EntryInput // run-scoped entries, applied with the input
	InputConsumed    bool
	Steering         []RunSteeringAccepted // admitted, not yet in context
	Turns            int
	Turn             *Turn // the current or last turn
	CancelRequested  bool
	Output           *content.ContentRef
	Error            *Failure
	AcceptedSeq      int64
	EndedSeq         int64
	RetryOf          string // the failed run this one retries

	// TranscriptionRequested and Transcripts track the transcription of
	// audio input before the first turn.
	TranscriptionRequested bool
	Transcripts            []Transcript
}

// Turn is one model round of a run and the tool batch that may follow it.
type Turn struct {
	N               int
	Planned         bool
	ContextRevision int64
	Fingerprint     string
	GenRequested    bool
	GenCompleted    bool
	Calls           []*Call
	BatchStarted    bool
	BatchCompleted  bool
	Completed       bool
	Outcome         string
	// LastMessage is the last assistant message this turn's generation produced.
	LastMessage *content.ContentRef
}

// Call is one tool call of a turn's batch.
type Call struct {
	ToolCall
	Started bool
	// Awaiting is set for a client tool's call: its result comes from the
	// client (SubmitToolOutput), not from the host.
	Awaiting bool
	// AwaitingSinceMs is when the call began to wait for the client (its
	// tools.call_awaiting event), from which its deadline runs.
	AwaitingSinceMs int64
	// Approval is the person's decision the call needs before it runs:
	// ApprovalPending until it is recorded, then ApprovalApproved or
	// ApprovalDenied; "" for a call that needs none.
	Approval  string
	Completed bool
	Status    string
	// Result is the completed call's result entry, held until its batch
	// ends and applies the batch's results in call order.
	Result *EntryInput
}

// ApplyResultsPerCall makes the core propose each tool result's entry as
// its call completes, as cores before ordered results did, instead of all
// of a batch's results in call order when it ends. It is for a host that
// replays what such a core proposed (a Temporal workflow started before
// then): either way the log reads back the same.
func (s *State) ApplyResultsPerCall() { s.resultsPerCall = true }

// NewState returns the state of a session with no events.
func NewState() *State {
	return &State{runs: map[string]*Run{}, submissions: map[string]string{}, entryIDs: map[string]struct{}{}}
}

// Run returns the run with the given id, or nil.
func (s *State) Run(id string) *Run { return s.runs[id] }

// Runs returns every run in acceptance order.
func (s *State) Runs() []*Run {
	out := make([]*Run, len(s.runOrder))
	for i, id := range s.runOrder {
		out[i] = s.runs[id]
	}
	return out
}

// ActiveRun returns the active run, or nil.
func (s *State) ActiveRun() *Run {
	if s.Active == "" {
		return nil
	}
	return s.runs[s.Active]
}

// HasWork reports whether a run is active or queued.
func (s *State) HasWork() bool { return s.Active != "" || len(s.Queue) > 0 }

// MaxTurns is the effective per-run turn bound.
func (s *State) MaxTurns() int {
	if s.Config.MaxTurns > 0 {
		return s.Config.MaxTurns
	}
	return DefaultMaxTurns
}

// OpenCalls returns the calls of the active run's open turn that have started
// and not completed, in batch order.
func (s *State) OpenCalls() []*Call {
	r := s.ActiveRun()
	if r == nil || r.Turn == nil || r.Turn.Completed {
		return nil
	}
	var out []*Call
	for _, c := range r.Turn.Calls {
		if c.Started && !c.Completed {
			out = append(out, c)
		}
	}
	return out
}
