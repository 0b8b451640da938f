package local

import (
	"context"
	"errors"
	"sync"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// session is a loaded session: its drive, its in-flight work and a channel
// closed whenever new events commit (long-polling readers wait on it).
type session struct {
	id       string
	mu       sync.Mutex
	drive    *core.Drive
	inflight map[string]*flight
	changed  chan struct{}
	// checkpointSeq is the seq of the session's latest checkpoint (0: none
	// known), for the checkpoint policy.
	checkpointSeq int64
}

// flight is one dispatched generation or tool call.
type flight struct {
	core.Work
	cancel context.CancelFunc
}

// session returns the loaded session, loading it from its latest checkpoint
// and the log on first use.
func (h *Host) session(ctx context.Context, id string) (*session, error) {
	h.mu.Lock()
	s := h.sessions[id]
	h.mu.Unlock()
	if s != nil {
		return s, nil
	}
	st, rep, err := h.load(ctx, id)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.sessions[id]; s != nil {
		return s, nil // another caller loaded it first
	}
	s = &session{id: id, drive: core.NewDrive(st), inflight: map[string]*flight{}, changed: make(chan struct{}),
		checkpointSeq: rep.CheckpointSeq}
	h.sessions[id] = s
	return s, nil
}

// load rebuilds a session's state from its latest usable checkpoint and the
// events after it, or from its whole log.
func (h *Host) load(ctx context.Context, id string) (*core.State, runtime.LoadReport, error) {
	return runtime.LoadStateReport(ctx, h.opt.Log, h.opt.Checkpoints, h.opt.Blobs, id, h.opt.Logger)
}

// commit appends one intent's proposals and applies what the store committed.
// On failure the proposals are abandoned; a head conflict reloads the state.
func (h *Host) commit(s *session, in core.Intent) error {
	events, err := h.opt.Log.Append(h.ctx, s.id, in.ExpectedHead, in.Proposals)
	if err != nil {
		s.drive.Abandon()
		if errors.Is(err, store.ErrHeadConflict) {
			if st, rep, rerr := h.load(h.ctx, s.id); rerr == nil {
				s.drive = core.NewDrive(st)
				s.checkpointSeq = max(s.checkpointSeq, rep.CheckpointSeq)
			}
		}
		return err
	}
	if err := s.drive.Committed(events); err != nil {
		return err // the log is authoritative; a reducer error is a bug worth surfacing
	}
	close(s.changed)
	s.changed = make(chan struct{})
	h.cancelStale(s)
	h.checkpoint(s)
	return nil
}

// checkpoint writes a checkpoint of the session when the policy says one is
// due: at an idle boundary, or CheckpointEvery events after the last one.
// Other commits cost one comparison. A failed write is logged and retried
// at the next commit that finds one due; the log stays authoritative.
// The caller holds s.mu.
func (h *Host) checkpoint(s *session) {
	st := s.drive.State()
	if h.opt.Checkpoints == nil || !runtime.CheckpointDue(st, s.checkpointSeq) {
		return
	}
	seq, err := runtime.MaybeCheckpoint(h.ctx, h.opt.Checkpoints, h.opt.Blobs, st, s.checkpointSeq)
	if err != nil && h.ctx.Err() == nil {
		h.opt.Logger.Warn("writing a reducer checkpoint failed", "session", s.id, "head", st.Head, "err", err)
	}
	s.checkpointSeq = seq
}

// cancelStale cancels in-flight work the state no longer awaits (a
// cancelled run, a finished compaction); its late result would be rejected
// as stale anyway.
func (h *Host) cancelStale(s *session) {
	st := s.drive.State()
	for key, f := range s.inflight {
		if !st.Awaits(f.Work) {
			f.cancel()
			delete(s.inflight, key)
		}
	}
}
