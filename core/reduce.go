package core

import (
	"encoding/json"
	"fmt"
)

// CorruptError says a committed event cannot be applied to the state built
// from the events before it: the log is damaged or was written by a bug.
type CorruptError struct {
	Seq    int64
	Kind   string
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("event %d (%s) does not apply: %s", e.Seq, e.Kind, e.Reason)
}

// Replay rebuilds a session's state from its events, in order from seq 1.
func Replay(events []Event) (*State, error) {
	s := NewState()
	for _, ev := range events {
		if err := s.Apply(ev); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Apply folds one committed event into the state. It is the only way state
// changes; the same events always yield the same state.
func (s *State) Apply(ev Event) error {
	if ev.Seq != s.Head+1 {
		return &CorruptError{ev.Seq, ev.Kind, fmt.Sprintf("expected seq %d", s.Head+1)}
	}
	if ev.Version != EventVersion {
		return &CorruptError{ev.Seq, ev.Kind, fmt.Sprintf("unknown version %d", ev.Version)}
	}
	if err := s.apply(ev); err != nil {
		return &CorruptError{ev.Seq, ev.Kind, err.Error()}
	}
	s.Head = ev.Seq
	return nil
}

func decode[T any](ev Event) (T, error) {
	var p T
	err := json.Unmarshal(ev.Payload, &p)
	return p, err
}

func (s *State) apply(ev Event) error {
	if !s.Opened && ev.Kind != KindSessionOpened {
		return fmt.Errorf("session not opened")
	}
	switch ev.Kind {
	case KindSessionWarning: // changes nothing
	case KindSessionConfigChangeRequested:
		p, err := decode[SessionConfigChangeRequested](ev)
		if err != nil {
			return err
		}
		s.PendingConfig = &p
	case KindSessionOpened, KindSessionConfigChanged, KindSessionClosed:
		if ev.Kind == KindSessionConfigChanged {
			s.PendingConfig = nil // applied, or replaced by a change made idle
		}
		// They change only the summary's fields: one fold for both.
		sum := s.Summary()
		if err := sum.apply(ev); err != nil {
			return err
		}
		s.SessionID, s.Parent, s.Opened, s.Closed, s.Config, s.ConfigRevision = sum.SessionID, sum.Parent, sum.Opened, sum.Closed, sum.Config, sum.ConfigRevision
	case KindContextEntriesApplied:
		p, err := decode[ContextEntriesApplied](ev)
		if err != nil {
			return err
		}
		if err := s.bumpRevision(p.BaseRevision); err != nil {
			return err
		}
		if err := s.applyEntries(p.Entries); err != nil {
			return err
		}
		s.noteModelMessages(p.Entries)
	case KindContextEntriesRemoved:
		p, err := decode[ContextEntriesRemoved](ev)
		if err != nil {
			return err
		}
		if err := s.bumpRevision(p.BaseRevision); err != nil {
			return err
		}
		s.removeEntries(p.EntryIDs)
	case KindContextKeysRemoved:
		p, err := decode[ContextKeysRemoved](ev)
		if err != nil {
			return err
		}
		if err := s.bumpRevision(p.BaseRevision); err != nil {
			return err
		}
		s.removeKeys(p.Keys)
	case KindContextCompacted:
		p, err := decode[ContextCompacted](ev)
		if err != nil {
			return err
		}
		if err := s.bumpRevision(p.BaseRevision); err != nil {
			return err
		}
		return s.applyCompacted(p)
	case KindCompactionRequested:
		p, err := decode[CompactionRequested](ev)
		if err != nil {
			return err
		}
		if s.Compaction != nil {
			return fmt.Errorf("compaction %s is already pending", s.Compaction.ID)
		}
		if p.ContextRevision != s.Revision {
			return fmt.Errorf("compaction covers revision %d, context is at %d", p.ContextRevision, s.Revision)
		}
		s.Compaction = &PendingCompaction{ID: p.CompactionID, Trigger: p.Trigger, ContextRevision: p.ContextRevision, EntryIDs: p.EntryIDs}
	case KindCompactionCompleted, KindCompactionFailed:
		p, err := decode[CompactionCompleted](ev) // both carry the id first
		if err != nil {
			return err
		}
		if s.Compaction == nil || s.Compaction.ID != p.CompactionID {
			return fmt.Errorf("compaction %s is not pending", p.CompactionID)
		}
		s.Compaction, s.runsSinceCompaction = nil, 0
	default:
		return s.applyRun(ev)
	}
	return nil
}

func (s *State) bumpRevision(base int64) error {
	if base != s.Revision {
		return fmt.Errorf("base revision %d, context is at %d", base, s.Revision)
	}
	s.Revision++
	return nil
}

func (s *State) applyRun(ev Event) error {
	switch ev.Kind {
	case KindRunAccepted:
		p, err := decode[RunAccepted](ev)
		if err != nil {
			return err
		}
		if s.runs[p.RunID] != nil {
			return fmt.Errorf("run %s already accepted", p.RunID)
		}
		r := &Run{ID: p.RunID, SubmissionID: p.SubmissionID, InputFingerprint: p.InputFingerprint, Input: p.Input, Activations: p.Activations, AcceptedSeq: ev.Seq, RetryOf: p.RetryOf}
		s.runs[p.RunID] = r
		s.runOrder = append(s.runOrder, p.RunID)
		if p.SubmissionID != "" {
			s.submissions[p.SubmissionID] = p.RunID
		}
		if p.Queued {
			r.Status = StatusQueued
			s.Queue = append(s.Queue, p.RunID)
		} else {
			if s.Active != "" {
				return fmt.Errorf("run %s accepted as active while %s is active", p.RunID, s.Active)
			}
			r.Status = StatusRunning
			s.Active = p.RunID
		}
		return nil
	case KindRunStarted:
		p, err := decode[RunStarted](ev)
		if err != nil {
			return err
		}
		if s.Active != "" || len(s.Queue) == 0 || s.Queue[0] != p.RunID {
			return fmt.Errorf("run %s is not at the head of the queue", p.RunID)
		}
		s.Queue = s.Queue[1:]
		s.Active = p.RunID
		s.runs[p.RunID].Status = StatusRunning
		return nil
	}

	runID, err := decode[RunStarted](ev) // every remaining payload starts with runId
	if err != nil {
		return err
	}
	r := s.runs[runID.RunID]
	if r == nil {
		return fmt.Errorf("unknown run %s", runID.RunID)
	}
	if r.ended() {
		s.endedRunEdits++
	}
	switch ev.Kind {
	case KindRunSteeringAccepted:
		p, err := decode[RunSteeringAccepted](ev)
		if err != nil {
			return err
		}
		r.Steering = append(r.Steering, p)
	case KindRunCancelRequested:
		r.CancelRequested = true
	case KindRunCompleted:
		p, err := decode[RunCompleted](ev)
		if err != nil {
			return err
		}
		r.Output = p.Output
		s.endRun(r, StatusCompleted, ev.Seq)
	case KindRunFailed:
		p, err := decode[RunFailed](ev)
		if err != nil {
			return err
		}
		r.Error = &p.Error
		s.endRun(r, StatusFailed, ev.Seq)
	case KindRunCancelled:
		s.endRun(r, StatusCancelled, ev.Seq)
	case KindRunTranscriptionRequested, KindRunTranscriptionCompleted:
		return s.applyTranscription(ev, r)
	default:
		return s.applyTurn(ev, r)
	}
	return nil
}

func (s *State) endRun(r *Run, status string, seq int64) {
	r.Status, r.EndedSeq = status, seq
	r.settle()
	if r.Turns > 0 {
		s.runsSinceCompaction++
	}
	if s.Active == r.ID {
		s.Active = ""
		return
	}
	for i, id := range s.Queue {
		if id == r.ID {
			s.Queue = append(s.Queue[:i:i], s.Queue[i+1:]...)
			return
		}
	}
}

// settle drops what an ended run no longer needs. Its input, activations,
// steering, transcripts and last turn served its turns; reads of an ended run
// use its status, turns, output, error and seqs, and a resubmission its
// submission id and fingerprint. Kept, they would make every checkpoint carry
// every run's inputs for the whole life of the session.
func (r *Run) settle() {
	r.Input, r.Activations, r.Steering, r.Transcripts, r.Turn = nil, nil, nil, nil, nil
}

// ended reports whether a run reached a terminal status.
func (r *Run) ended() bool {
	return r.Status == StatusCompleted || r.Status == StatusFailed || r.Status == StatusCancelled
}

func (s *State) applyTurn(ev Event, r *Run) error {
	if ev.Kind == KindTurnStarted {
		p, err := decode[TurnStarted](ev)
		if err != nil {
			return err
		}
		if r.Turn != nil && !r.Turn.Completed {
			return fmt.Errorf("turn %d is still open", r.Turn.N)
		}
		if p.Turn != r.Turns+1 {
			return fmt.Errorf("turn %d follows turn %d", p.Turn, r.Turns)
		}
		r.Turns = p.Turn
		r.Turn = &Turn{N: p.Turn}
		r.InputConsumed = true
		r.Steering = nil // the turn start carries them into context
		return nil
	}
	t := r.Turn
	if t == nil || t.Completed {
		return fmt.Errorf("no open turn in run %s", r.ID)
	}
	switch ev.Kind {
	case KindTurnPlanned:
		p, err := decode[TurnPlanned](ev)
		if err != nil {
			return err
		}
		if p.ContextRevision != s.Revision {
			return fmt.Errorf("planned at revision %d, context is at %d", p.ContextRevision, s.Revision)
		}
		t.Planned, t.ContextRevision, t.Fingerprint = true, p.ContextRevision, p.Fingerprint
	case KindTurnGenerationRequested:
		t.GenRequested = true
	case KindTurnGenerationCompleted:
		p, err := decode[TurnGenerationCompleted](ev)
		if err != nil {
			return err
		}
		t.GenCompleted = true
		if p.Cache != nil {
			s.LastSegments = &p.Cache.Segments
		}
		for _, c := range p.ToolCalls {
			t.Calls = append(t.Calls, &Call{ToolCall: c})
		}
	case KindToolBatchStarted:
		t.BatchStarted = true
	case KindToolCallStarted:
		p, err := decode[ToolCallStarted](ev)
		if err != nil {
			return err
		}
		c := t.call(p.CallID)
		if c == nil {
			return fmt.Errorf("unknown call %s", p.CallID)
		}
		c.Started = true
	case KindToolApprovalRequested:
		p, err := decode[ToolApprovalRequested](ev)
		if err != nil {
			return err
		}
		c := t.call(p.CallID)
		if c == nil || !c.Started || c.Completed {
			return fmt.Errorf("call %s is not open", p.CallID)
		}
		c.Approval = ApprovalPending
	case KindToolApprovalDecided:
		p, err := decode[ToolApprovalDecided](ev)
		if err != nil {
			return err
		}
		c := t.call(p.CallID)
		if c == nil || c.Approval != ApprovalPending {
			return fmt.Errorf("call %s waits for no decision", p.CallID)
		}
		c.Approval = ApprovalDenied
		if p.Approved {
			c.Approval = ApprovalApproved
		}
	case KindToolCallAwaiting:
		p, err := decode[ToolCallAwaiting](ev)
		if err != nil {
			return err
		}
		c := t.call(p.CallID)
		if c == nil || !c.Started || c.Completed {
			return fmt.Errorf("call %s is not open", p.CallID)
		}
		c.Awaiting, c.AwaitingSinceMs = true, ev.ObservedAtMs
	case KindToolCallCompleted:
		p, err := decode[ToolCallCompleted](ev)
		if err != nil {
			return err
		}
		c := t.call(p.CallID)
		if c == nil || c.Completed {
			return fmt.Errorf("call %s is not open", p.CallID)
		}
		c.Completed, c.Status, c.Result = true, p.Status, p.Entry
	case KindToolBatchCompleted:
		t.BatchCompleted = true
		for _, c := range t.Calls {
			c.Result = nil // applied by now
		}
	case KindTurnCompleted:
		p, err := decode[TurnCompleted](ev)
		if err != nil {
			return err
		}
		t.Completed, t.Outcome = true, p.Outcome
	default:
		return fmt.Errorf("unknown event kind")
	}
	return nil
}

func (t *Turn) call(id string) *Call {
	for _, c := range t.Calls {
		if c.CallID == id {
			return c
		}
	}
	return nil
}

// noteModelMessages remembers the last assistant message of a run's turn: it
// becomes the run's output when the run completes.
func (s *State) noteModelMessages(entries []Entry) {
	for _, e := range entries {
		if e.Source != SourceModel || e.Kind != EntryMessage || e.RunID == "" {
			continue
		}
		if r := s.runs[e.RunID]; r != nil && r.Turn != nil {
			ref := e.Content
			r.Turn.LastMessage = &ref
		}
	}
}
