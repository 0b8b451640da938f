package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// loadPage bounds each log read of a load.
const loadPage = 1000

// CheckpointEvery is the most events a session goes without a checkpoint
// while it has work.
const CheckpointEvery = 1000

// IdleCheckpointEvery is the fewest events since the last checkpoint for
// which an idle session is checkpointed. A load replays at most this many
// events after an idle checkpoint, and a long chat of short runs writes a
// checkpoint every few dozen runs, not after each one.
const IdleCheckpointEvery = 256

// KindHistoryIncomplete is the error kind (JSON-RPC data.kind) of a load
// that found events missing from the log.
const KindHistoryIncomplete = "history_incomplete"

// ErrHistoryIncomplete is matched by *HistoryIncompleteError.
var ErrHistoryIncomplete = errors.New("session history incomplete")

// HistoryIncompleteError says the log lacks events a load needs: an event
// after Missing-1 is there but Missing is not, or the log ends before the
// head its catalog records. A load never returns a partial state instead.
type HistoryIncompleteError struct {
	SessionID string
	Missing   int64 // the first seq the log did not return
	Head      int64 // the session's head as its catalog records it
}

func (e *HistoryIncompleteError) Error() string {
	return fmt.Sprintf("session %s: history incomplete: event %d of %d is missing from the log", e.SessionID, e.Missing, e.Head)
}
func (e *HistoryIncompleteError) Unwrap() error { return ErrHistoryIncomplete }

// LoadReport says how LoadStateReport built a state.
type LoadReport struct {
	// CheckpointSeq is the seq of the checkpoint the state started from; 0
	// for a replay of the whole log.
	CheckpointSeq int64
	// EventsRead counts the events applied from the log.
	EventsRead int
	// Fallback says why the latest checkpoint was not used; "" when there
	// was none or it was used.
	Fallback string
}

// LoadState returns a session's current state: its latest usable checkpoint
// (cps may be nil: none) with the authoritative event tail after it, or a
// replay of the whole log. A checkpoint is unusable when its blob is
// missing or unreadable, its format or version is unknown, it fails
// validation, it is past the log's head, or the tail does not apply to it;
// the load then replays the whole log and logs why. Events missing from the
// range a load needs are a *HistoryIncompleteError in both paths; a
// session without events is store.ErrSessionNotFound.
func LoadState(ctx context.Context, log store.SessionLog, cps store.Checkpoints, blobs blob.Store, sessionID string, logger *slog.Logger) (*core.State, error) {
	st, _, err := LoadStateReport(ctx, log, cps, blobs, sessionID, logger)
	return st, err
}

// LoadStateReport is LoadState, also reporting how the state was built.
func LoadStateReport(ctx context.Context, log store.SessionLog, cps store.Checkpoints, blobs blob.Store, sessionID string, logger *slog.Logger) (*core.State, LoadReport, error) {
	if logger == nil {
		logger = slog.Default()
	}
	var rep LoadReport
	// The checkpoint is looked up before the head: a checkpoint is written
	// after its events commit, so one past a head read later is damage,
	// not a race.
	var cp *core.State
	var cpSeq int64
	if cps != nil {
		var err error
		cp, cpSeq, rep.Fallback, err = latestCheckpoint(ctx, cps, blobs, sessionID)
		if err != nil {
			return nil, rep, err
		}
	}
	life, err := log.Session(ctx, sessionID)
	if err != nil {
		return nil, rep, err
	}
	head := life.Head
	if cp != nil && cpSeq > head {
		cp, rep.Fallback = nil, fmt.Sprintf("checkpoint at seq %d is past the log head %d", cpSeq, head)
	}
	if cp != nil {
		n, err := readTail(ctx, log, sessionID, &cp.Head, cp.Apply, head)
		var corrupt *core.CorruptError
		if !errors.As(err, &corrupt) {
			if err != nil {
				return nil, rep, err
			}
			rep.CheckpointSeq, rep.EventsRead = cpSeq, n
			return cp, rep, nil
		}
		rep.Fallback = "the tail does not apply: " + err.Error()
	}
	if rep.Fallback != "" {
		logger.Warn("reducer checkpoint unusable; replaying the whole log",
			"session", sessionID, "checkpoint", cpSeq, "reason", rep.Fallback)
	}
	st := core.NewState()
	n, err := readTail(ctx, log, sessionID, &st.Head, st.Apply, head)
	if err != nil {
		return nil, rep, err
	}
	if st.Head == 0 {
		return nil, rep, fmt.Errorf("%w: %s", store.ErrSessionNotFound, sessionID)
	}
	rep.EventsRead = n
	st.SessionID = sessionID // a history fork replays its source's session.opened
	return st, rep, nil
}

// latestCheckpoint returns the session's latest checkpoint decoded, or a
// reason it is unusable, or neither when there is none. Only a cancelled
// context is an error.
func latestCheckpoint(ctx context.Context, cps store.Checkpoints, blobs blob.Store, sessionID string) (*core.State, int64, string, error) {
	seq, d, err := cps.LatestCheckpoint(ctx, sessionID, 0)
	if errors.Is(err, store.ErrCheckpointNotFound) {
		return nil, 0, "", nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, "", ctx.Err()
		}
		return nil, 0, "looking it up: " + err.Error(), nil
	}
	data, err := blobs.Get(ctx, d)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, "", ctx.Err()
		}
		return nil, seq, fmt.Sprintf("reading its blob %s: %v", d, err), nil
	}
	st, err := decodeCheckpoint(ctx, blobs, data)
	if ctx.Err() != nil {
		return nil, 0, "", ctx.Err()
	}
	switch {
	case err != nil:
		return nil, seq, err.Error(), nil
	case st.Head != seq:
		return nil, seq, fmt.Sprintf("recorded at seq %d, its state is at seq %d", seq, st.Head), nil
	case st.SessionID != sessionID:
		return nil, seq, fmt.Sprintf("its state is of session %q", st.SessionID), nil
	}
	return st, seq, "", nil
}

// decodeCheckpoint decodes a checkpoint blob, reading the chunks a chunked
// one names.
func decodeCheckpoint(ctx context.Context, blobs blob.Store, data []byte) (*core.State, error) {
	have := map[content.Digest][]byte{}
	for {
		need, err := core.CheckpointNeeds(data, have)
		if err != nil {
			return nil, err
		}
		if len(need) == 0 {
			return core.DecodeCheckpointParts(data, have)
		}
		// A level's chunks in one read where the store can; Get reads
		// the rest.
		got, err := blob.GetMany(ctx, blobs, need)
		if err != nil {
			return nil, fmt.Errorf("reading its chunks: %w", err)
		}
		for _, d := range need {
			b, ok := got[d]
			if !ok {
				if b, err = blobs.Get(ctx, d); err != nil {
					return nil, fmt.Errorf("reading its chunk %s: %w", d, err)
				}
			}
			have[d] = b
		}
	}
}

// readTail applies the log's events after *at to a state (or a summary)
// through apply, which moves *at on, through at least head, and returns
// how many it applied. An event missing from that range is a
// *HistoryIncompleteError; an event that does not apply is the reducer's
// *core.CorruptError.
func readTail(ctx context.Context, log store.SessionLog, sessionID string, at *int64, apply func(core.Event) error, head int64) (int, error) {
	n := 0
	for {
		evs, err := log.ReadAfter(ctx, sessionID, *at, loadPage)
		if err != nil {
			return n, err
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			if ev.Seq > *at+1 {
				return n, &HistoryIncompleteError{SessionID: sessionID, Missing: *at + 1, Head: max(head, ev.Seq)}
			}
			if err := apply(ev); err != nil {
				return n, err
			}
			n++
		}
		// A short page is the end of the log, unless it ends before the head.
		if len(evs) < loadPage && *at >= head {
			break
		}
	}
	if *at < head {
		return n, &HistoryIncompleteError{SessionID: sessionID, Missing: *at + 1, Head: head}
	}
	return n, nil
}

// Idle reports whether a state is at an idle boundary: no active or queued
// run and no pending compaction.
func Idle(st *core.State) bool { return !st.HasWork() && st.Compaction == nil }

// CheckpointPolicy says when a host checkpoints a session: at an idle
// boundary once IdleEvery events have passed since its latest checkpoint,
// and whenever Every events have. Zero fields take IdleCheckpointEvery
// and CheckpointEvery.
type CheckpointPolicy struct {
	IdleEvery int64
	Every     int64
}

// Due reports whether a checkpoint of st is due, given the seq of the
// session's latest checkpoint.
func (p CheckpointPolicy) Due(st *core.State, lastSeq int64) bool {
	idleEvery, every := p.IdleEvery, p.Every
	if idleEvery <= 0 {
		idleEvery = IdleCheckpointEvery
	}
	if every <= 0 {
		every = CheckpointEvery
	}
	if st.Head <= lastSeq || !st.Opened {
		return false
	}
	since := st.Head - lastSeq
	return (Idle(st) && since >= idleEvery) || since >= every
}

// CheckpointDue is the default policy's Due.
func CheckpointDue(st *core.State, lastSeq int64) bool { return CheckpointPolicy{}.Due(st, lastSeq) }

// CheckpointDueEveryIdle is the policy before IdleCheckpointEvery: a
// checkpoint at every idle boundary with events since the last. Temporal
// workflows that started under it keep it, so their histories replay.
func CheckpointDueEveryIdle(st *core.State, lastSeq int64) bool {
	if st.Head <= lastSeq || !st.Opened {
		return false
	}
	return Idle(st) || st.Head-lastSeq >= CheckpointEvery
}

// CheckpointMark is what a host keeps of a session's latest checkpoint: its
// seq, and the memo that lets the next checkpoint encode only what changed.
type CheckpointMark struct {
	Seq  int64
	memo *core.CheckpointMemo
}

// WriteCheckpoint stores the state's checkpoint, records it at its head and
// prunes the session's older checkpoints.
func WriteCheckpoint(ctx context.Context, cps store.Checkpoints, blobs blob.Store, st *core.State) error {
	_, err := writeCheckpoint(ctx, cps, blobs, st, CheckpointMark{})
	return err
}

// writeCheckpoint stores a chunked checkpoint: the chunks and pages the
// mark's memo does not know, the index, the new pages' edges to their
// chunks and the index's edges to its pages, so that the checkpoint row
// holds them all. It returns the new mark once the
// checkpoint is recorded (pruning may still have failed), else the mark it
// was given.
func writeCheckpoint(ctx context.Context, cps store.Checkpoints, blobs blob.Store, st *core.State, mark CheckpointMark) (CheckpointMark, error) {
	parts, err := core.EncodeCheckpointParts(st, mark.memo)
	if err != nil {
		return mark, fmt.Errorf("encoding the checkpoint of %s at %d: %w", st.SessionID, st.Head, err)
	}
	// The chunks, pages, index and their edges are one batch: one
	// transaction where the store writes batches.
	batch := store.Batch{Blobs: make([][]byte, 0, len(parts.New)+1)}
	for _, b := range parts.New {
		batch.Blobs = append(batch.Blobs, b.Data)
	}
	d := content.Sum(parts.Index)
	batch.Blobs = append(batch.Blobs, parts.Index)
	for _, e := range append(parts.Edges, core.CheckpointEdges{Parent: d, Children: parts.Named}) {
		if len(e.Children) > 0 {
			batch.Edges = append(batch.Edges, store.Edge{Parent: e.Parent, Children: e.Children})
		}
	}
	err = store.WriteBatch(ctx, blobs, cps, batch)
	var missing *blob.MissingError
	if errors.As(err, &missing) && mark.memo != nil {
		// A chunk or page the memo remembers was collected since: store
		// every one again.
		return writeCheckpoint(ctx, cps, blobs, st, CheckpointMark{Seq: mark.Seq})
	}
	if err != nil {
		return mark, fmt.Errorf("storing the checkpoint of %s at %d: %w", st.SessionID, st.Head, err)
	}
	if err := cps.PutCheckpoint(ctx, st.SessionID, st.Head, d); err != nil {
		return mark, fmt.Errorf("recording the checkpoint of %s at %d: %w", st.SessionID, st.Head, err)
	}
	next := CheckpointMark{Seq: st.Head, memo: parts.Memo}
	if _, err := cps.PruneCheckpoints(ctx, st.SessionID, st.Head); err != nil {
		return next, fmt.Errorf("pruning the checkpoints of %s before %d: %w", st.SessionID, st.Head, err)
	}
	return next, nil
}

// Maybe writes a checkpoint of st when the policy says one is due and
// returns the mark of the session's latest checkpoint: a new one once one
// was recorded (even if pruning older ones then failed), else mark. A nil
// cps writes nothing.
func (p CheckpointPolicy) Maybe(ctx context.Context, cps store.Checkpoints, blobs blob.Store, st *core.State, mark CheckpointMark) (CheckpointMark, error) {
	if cps == nil || !p.Due(st, mark.Seq) {
		return mark, nil
	}
	return writeCheckpoint(ctx, cps, blobs, st, mark)
}
