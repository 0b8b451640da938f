package core

import (
	"encoding/json"
	"fmt"
)

// Summary is what a session reports of itself besides its context and its
// runs: identity, configuration, context revision and head. A reader of a
// session that is not in memory and has no unfinished work (see
// Lifecycle.Unfinished) needs nothing else, and gets it from a checkpoint's
// index and the events after it, without decoding the entries and runs a
// long session's checkpoint holds: the cost of the tail, not of the
// session.
type Summary struct {
	SessionID      string
	Parent         *ParentRef
	Opened         bool
	Closed         bool
	Config         SessionConfig
	ConfigRevision int64
	Revision       int64
	Head           int64
}

// Summary returns the state's summary.
func (s *State) Summary() Summary {
	return Summary{SessionID: s.SessionID, Parent: s.Parent, Opened: s.Opened, Closed: s.Closed, Config: s.Config,
		ConfigRevision: s.ConfigRevision, Revision: s.Revision, Head: s.Head}
}

// CheckpointSummary returns the summary of a stored checkpoint, of either
// version, reading only its head: a chunked checkpoint's index is enough.
func CheckpointSummary(data []byte) (Summary, error) {
	var h checkpointHead
	if err := json.Unmarshal(data, &h); err != nil {
		return Summary{}, &CheckpointError{Reason: "undecodable: " + err.Error()}
	}
	if h.Format != CheckpointFormat || (h.Version != CheckpointVersion && h.Version != CheckpointChunkedVersion && h.Version != CheckpointNestedVersion) {
		return Summary{}, &CheckpointError{Reason: fmt.Sprintf("format %q version %d", h.Format, h.Version)}
	}
	return Summary{SessionID: h.SessionID, Parent: h.Parent, Opened: h.Opened, Closed: h.Closed, Config: h.Config,
		ConfigRevision: h.ConfigRevision, Revision: h.Revision, Head: h.Head}, nil
}

// Apply folds the next event into the summary as State.Apply changes the
// same fields (the state folds its session events through this one): the
// same sequence check and the same revision check, so a tail that would
// not apply to the state does not apply here either.
func (s *Summary) Apply(ev Event) error {
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

func (s *Summary) apply(ev Event) error {
	if !s.Opened && ev.Kind != KindSessionOpened {
		return fmt.Errorf("session not opened")
	}
	// revised checks and moves the revision for an event that changes the
	// context: its payload names the revision it applies to.
	revised := func() error {
		p, err := decode[struct {
			BaseRevision int64 `json:"baseRevision"`
		}](ev)
		if err != nil {
			return err
		}
		if p.BaseRevision != s.Revision {
			return fmt.Errorf("base revision %d, context is at %d", p.BaseRevision, s.Revision)
		}
		s.Revision++
		return nil
	}
	switch ev.Kind {
	case KindSessionOpened:
		p, err := decode[SessionOpened](ev)
		if err != nil {
			return err
		}
		if s.Opened {
			return fmt.Errorf("session already opened")
		}
		s.Opened, s.SessionID, s.Parent, s.Config, s.ConfigRevision = true, p.SessionID, p.Parent, p.Config, 1
	case KindSessionConfigChanged:
		p, err := decode[SessionConfigChanged](ev)
		if err != nil {
			return err
		}
		s.Config = p.Config
		s.ConfigRevision++
	case KindSessionClosed:
		s.Closed = true
	case KindContextEntriesApplied, KindContextEntriesRemoved, KindContextKeysRemoved, KindContextCompacted:
		return revised()
	}
	return nil
}
