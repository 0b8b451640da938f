package local

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cairn-agents/cairn/core"
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
}

// flight is one dispatched generation or tool call.
type flight struct {
	runID        string
	turn         int
	callID       string // "" for a generation
	compactionID string // set for a compaction, and nothing else is
	cancel       context.CancelFunc
}

const readPage = 1000

// session returns the loaded session, replaying it from the log on first use.
func (h *Host) session(ctx context.Context, id string) (*session, error) {
	h.mu.Lock()
	s := h.sessions[id]
	h.mu.Unlock()
	if s != nil {
		return s, nil
	}
	st, err := h.replay(ctx, id)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.sessions[id]; s != nil {
		return s, nil // another caller loaded it first
	}
	s = &session{id: id, drive: core.NewDrive(st), inflight: map[string]*flight{}, changed: make(chan struct{})}
	h.sessions[id] = s
	return s, nil
}

// replay rebuilds a session's state from its whole log.
func (h *Host) replay(ctx context.Context, id string) (*core.State, error) {
	st := core.NewState()
	for {
		evs, err := h.opt.Log.ReadAfter(ctx, id, st.Head, readPage)
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			if err := st.Apply(ev); err != nil {
				return nil, err
			}
		}
		if len(evs) < readPage {
			break
		}
	}
	if st.Head == 0 {
		return nil, fmt.Errorf("%w: %s", store.ErrSessionNotFound, id)
	}
	return st, nil
}

// commit appends one intent's proposals and applies what the store committed.
// On failure the proposals are abandoned; a head conflict reloads the state.
func (h *Host) commit(s *session, in core.Intent) error {
	events, err := h.opt.Log.Append(h.ctx, s.id, in.ExpectedHead, in.Proposals)
	if err != nil {
		s.drive.Abandon()
		if errors.Is(err, store.ErrHeadConflict) {
			if st, rerr := h.replay(h.ctx, s.id); rerr == nil {
				s.drive = core.NewDrive(st)
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
	return nil
}

// cancelStale cancels in-flight work whose turn or call is no longer open
// (a cancelled run); its late result would be rejected as stale anyway.
func (h *Host) cancelStale(s *session) {
	st := s.drive.State()
	for key, f := range s.inflight {
		if f.compactionID != "" {
			if st.Compaction == nil || st.Compaction.ID != f.compactionID {
				f.cancel()
				delete(s.inflight, key)
			}
			continue
		}
		r := st.ActiveRun()
		open := r != nil && r.ID == f.runID && r.Turn != nil && r.Turn.N == f.turn && !r.Turn.Completed
		if open && f.callID != "" {
			open = false
			for _, c := range st.OpenCalls() {
				if c.CallID == f.callID {
					open = true
				}
			}
		}
		if !open {
			f.cancel()
			delete(s.inflight, key)
		}
	}
}
