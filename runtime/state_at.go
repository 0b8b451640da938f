package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// ErrSeqPastHead is matched by the error of a read at a seq the session has
// not reached.
var ErrSeqPastHead = errors.New("seq is past the session's head")

// StateAt returns a session's state as it stood after event seq: from the
// nearest usable checkpoint at or below seq (cps may be nil), else from the
// start, applying exactly the events up to seq. A gap is a
// *HistoryIncompleteError; a seq past the head matches ErrSeqPastHead.
func StateAt(ctx context.Context, log store.SessionLog, cps store.Checkpoints, blobs blob.Store, sessionID string, seq int64) (*core.State, error) {
	if seq < 1 {
		return nil, fmt.Errorf("%w: seq %d", ErrSeqPastHead, seq)
	}
	st := checkpointAtOrBelow(ctx, cps, blobs, sessionID, seq)
	if st == nil {
		st = core.NewState()
	}
	if err := applyUpTo(ctx, log, sessionID, st, seq, nil); err != nil {
		return nil, err
	}
	return st, nil
}

// checkpointAtOrBelow decodes the nearest checkpoint at or below seq; nil
// when there is none or it is unusable (the caller replays instead).
func checkpointAtOrBelow(ctx context.Context, cps store.Checkpoints, blobs blob.Store, sessionID string, seq int64) *core.State {
	if cps == nil {
		return nil
	}
	at, d, err := cps.LatestCheckpoint(ctx, sessionID, seq)
	if err != nil {
		return nil
	}
	data, err := blobs.Get(ctx, d)
	if err != nil {
		return nil
	}
	st, err := decodeCheckpoint(ctx, blobs, data)
	if err != nil || st.Head != at || st.SessionID != sessionID {
		return nil
	}
	return st
}

// applyUpTo applies the events after st.Head through seq, calling each (if
// set) after every event with the state before and after it.
func applyUpTo(ctx context.Context, log store.SessionLog, sessionID string, st *core.State, seq int64, each func(ev core.Event, before []core.Entry) error) error {
	for st.Head < seq {
		evs, err := log.ReadAfter(ctx, sessionID, st.Head, int(min(seq-st.Head, loadPage)))
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			if st.Head == 0 {
				return fmt.Errorf("%w: %s", store.ErrSessionNotFound, sessionID)
			}
			return fmt.Errorf("%w: seq %d, head %d", ErrSeqPastHead, seq, st.Head)
		}
		for _, ev := range evs {
			if ev.Seq > seq {
				return nil
			}
			if ev.Seq != st.Head+1 {
				return &HistoryIncompleteError{SessionID: sessionID, Missing: st.Head + 1, Head: ev.Seq}
			}
			var before []core.Entry
			if each != nil {
				before = st.Context()
			}
			if err := st.Apply(ev); err != nil {
				return err
			}
			if each != nil {
				if err := each(ev, before); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ContextChange is one entry's change between two points of a session.
type ContextChange struct {
	Seq   int64      `json:"seq"` // the event that made it
	Entry core.Entry `json:"entry"`
	// By is the id of the entry that superseded this one (superseded only).
	By string `json:"by,omitempty"`
}

// ContextDiff lists, in the order they happened, the entries added to,
// removed from and superseded in a session's active context by the events
// after fromSeq through toSeq.
type ContextDiff struct {
	FromSeq    int64           `json:"fromSeq"`
	ToSeq      int64           `json:"toSeq"`
	Added      []ContextChange `json:"added"`
	Removed    []ContextChange `json:"removed"`
	Superseded []ContextChange `json:"superseded"`
}

// DiffContext replays the session to fromSeq (0: its start) and then event
// by event to toSeq, recording every entry each event added, removed or
// superseded.
func DiffContext(ctx context.Context, log store.SessionLog, cps store.Checkpoints, blobs blob.Store, sessionID string, fromSeq, toSeq int64) (ContextDiff, error) {
	d := ContextDiff{FromSeq: fromSeq, ToSeq: toSeq, Added: []ContextChange{}, Removed: []ContextChange{}, Superseded: []ContextChange{}}
	if fromSeq < 0 || toSeq < fromSeq {
		return d, fmt.Errorf("%w: from %d, to %d", ErrSeqPastHead, fromSeq, toSeq)
	}
	st := core.NewState()
	if fromSeq > 0 {
		var err error
		if st, err = StateAt(ctx, log, cps, blobs, sessionID, fromSeq); err != nil {
			return d, err
		}
	}
	err := applyUpTo(ctx, log, sessionID, st, toSeq, func(ev core.Event, before []core.Entry) error {
		after := st.Context()
		for _, e := range after {
			if !slices.ContainsFunc(before, func(b core.Entry) bool { return b.ID == e.ID }) {
				d.Added = append(d.Added, ContextChange{Seq: ev.Seq, Entry: e})
				if e.Supersedes != "" {
					if old, ok := st.EntryByID(e.Supersedes); ok {
						d.Superseded = append(d.Superseded, ContextChange{Seq: ev.Seq, Entry: old, By: e.ID})
					}
				}
			}
		}
		for _, b := range before {
			if !slices.ContainsFunc(after, func(e core.Entry) bool { return e.ID == b.ID }) {
				d.Removed = append(d.Removed, ContextChange{Seq: ev.Seq, Entry: b})
			}
		}
		return nil
	})
	return d, err
}
