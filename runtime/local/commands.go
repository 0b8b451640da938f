package local

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// CreateSession opens a new session. An empty id gets a fresh one.
func (h *Host) CreateSession(ctx context.Context, id string, cfg core.SessionConfig, instructions *core.EntryInput) (string, error) {
	return h.createSession(ctx, id, cfg, instructions, nil)
}

// createSession is CreateSession for a session that may be a sub-agent's.
func (h *Host) createSession(ctx context.Context, id string, cfg core.SessionConfig, instructions *core.EntryInput, parent *core.ParentRef) (string, error) {
	if h.ctx.Err() != nil {
		return "", ErrHostClosed
	}
	id, err := runtime.SessionIDOrNew(id, h.opt.NewID)
	if err != nil {
		return "", err
	}
	if _, err := h.opt.Log.Session(ctx, id); err == nil {
		return "", runtime.SessionExists(id)
	} else if !errors.Is(err, store.ErrSessionNotFound) {
		return "", err
	}
	// The new session enters the map before its first event commits, so
	// no caller loads a second copy meanwhile; if a caller is already
	// looking the id up, that caller's copy stays, and this one (which
	// only appends the opening) is dropped.
	s := newSession(id)
	s.drive = core.NewDrive(core.NewState())
	h.mu.Lock()
	registered := h.sessions[id] == nil
	if registered {
		s.refs = 1
		h.insert(s)
	}
	h.mu.Unlock()
	s.mu.Lock()
	_, err = runtime.AdmitAndAppend(h.on(s), core.OpenSession{AtMs: h.nowMs(), SessionID: id, Config: cfg, Instructions: instructions, Parent: parent})
	s.mu.Unlock()
	if registered && h.finishLoad(s, err) == nil {
		h.release(s)
	}
	if err != nil {
		if errors.Is(err, store.ErrHeadConflict) {
			return "", runtime.SessionExists(id)
		}
		return "", err
	}
	return id, nil
}

// Submit admits a command for a session and persists its events before it
// returns; the session's work then proceeds in the background.
func (h *Host) Submit(ctx context.Context, sessionID string, cmd core.Command) (core.Admission, error) {
	return h.SubmitWith(ctx, sessionID, cmd, nil)
}

// SubmitWith implements api.StagingHost: Submit for a command that names
// blobs it brings (a run's input text). They are stored in the
// transaction that appends the command's admission, so a command the
// session refuses stores nothing, and the blobs cost no commit of their
// own.
func (h *Host) SubmitWith(ctx context.Context, sessionID string, cmd core.Command, blobs [][]byte) (core.Admission, error) {
	if h.ctx.Err() != nil {
		return core.Admission{}, ErrHostClosed
	}
	s, err := h.session(ctx, sessionID)
	if err != nil {
		return core.Admission{}, err
	}
	defer h.release(s)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := h.awaitCompaction(ctx, s, cmd); err != nil {
		return core.Admission{}, err
	}
	if _, ok := cmd.(core.StartRun); ok {
		if err := h.refresh(ctx, s); err != nil {
			return core.Admission{}, err
		}
	}
	adm, err := h.admitWith(s, cmd, store.Batch{Blobs: blobs})
	if err != nil {
		return adm, err
	}
	h.pump(s)
	return adm, nil
}

// awaitCompaction holds a command that pending compaction gates (runs and
// context edits) until the compaction has finished, instead of failing it.
// Held commands go on in arrival order, one at a time, each admitted against
// the state the one before it left, as if it had arrived then: an edit held
// before a run start lands first and the run sees it; an edit held after
// one meets the active run. A command that finds others held queues behind
// them even once the compaction is over. Steering, cancellation and results
// never wait. The caller holds s.mu; it is released while waiting, and the
// command leaves the queue before the caller admits it under that same lock.
func (h *Host) awaitCompaction(ctx context.Context, s *session, cmd core.Command) error {
	if !runtime.Holdable(cmd) {
		return nil
	}
	if !runtime.CompactionHolds(h.on(s)) && len(s.held) == 0 {
		return nil
	}
	me := &heldCommand{}
	s.held = append(s.held, me)
	for {
		wake := s.heldMoved
		if s.held[0] == me {
			if !runtime.CompactionHolds(h.on(s)) {
				s.leaveHeld(me)
				return nil
			}
			h.pump(s) // make sure it runs
			wake = s.changed
		}
		s.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			s.mu.Lock()
			s.leaveHeld(me)
			return ctx.Err()
		case <-h.ctx.Done():
			s.mu.Lock()
			s.leaveHeld(me)
			return ErrHostClosed
		}
		s.mu.Lock()
	}
}

// heldCommand is a command's place in its session's held queue.
type heldCommand struct{ _ byte } // not zero-size: each place is a distinct pointer

// leaveHeld takes a command out of the held queue and, when it was at the
// front, wakes the rest so the next one goes on. The caller holds s.mu.
func (s *session) leaveHeld(me *heldCommand) {
	i := slices.Index(s.held, me)
	if i < 0 {
		return
	}
	s.held = slices.Delete(s.held, i, i+1)
	if i == 0 {
		close(s.heldMoved)
		s.heldMoved = make(chan struct{})
	}
}

// refresh is runtime.RefreshContext with the host's executor reading the
// links. The caller holds s.mu.
func (h *Host) refresh(ctx context.Context, s *session) error {
	return runtime.RefreshContext(h.on(s), func(sum core.Summary) (runtime.Refreshed, error) {
		return h.opt.Executor.Refresh(ctx, sum.Config, runtime.AgentMenuAllowed(sum.Config, sum.Depth()))
	})
}

// Inspect runs fn with the session's committed state under its lock. fn must
// not keep references to the state after it returns.
func (h *Host) Inspect(ctx context.Context, sessionID string, fn func(*core.State)) error {
	s, err := h.session(ctx, sessionID)
	if err != nil {
		return err
	}
	defer h.release(s)
	s.mu.Lock()
	defer s.mu.Unlock()
	d := h.current(s)
	if d == nil {
		return errReloading(sessionID)
	}
	fn(d.State())
	return nil
}

// InspectLive runs fn with the session's committed state under its lock,
// as Inspect does, if the host holds the session now, and reports whether
// it did. It never loads the session, and the read is not a use for the
// eviction policy: a caller that can also answer from the store
// (session/read) does so for a session not in memory, and a client polling
// a session keeps it in memory no longer than it would be otherwise.
//
// The state is the session's own: the host is its only writer, so its head
// is the log's. fn must not keep references to the state after it returns.
func (h *Host) InspectLive(sessionID string, fn func(*core.State)) bool {
	h.mu.Lock()
	s := h.sessions[sessionID]
	live := false
	if s != nil {
		select {
		case <-s.loaded: // a session in the map whose load ended has loaded
			live = true
		default: // still loading or being created: the store answers
		}
	}
	if !live {
		h.mu.Unlock()
		return false
	}
	s.refs++ // held, it is not evicted while fn runs
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		s.refs-- // without touch: a read is not a use
		h.mu.Unlock()
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	d := h.current(s)
	if d == nil {
		return false // the store answers
	}
	fn(d.State())
	return true
}

// Changed returns the session's head and a channel closed at its next commit,
// or when the session is evicted: a waiter then calls Changed again.
func (h *Host) Changed(ctx context.Context, sessionID string) (int64, <-chan struct{}, error) {
	s, err := h.session(ctx, sessionID)
	if err != nil {
		return 0, nil, err
	}
	defer h.release(s)
	s.mu.Lock()
	defer s.mu.Unlock()
	d := h.current(s)
	if d == nil {
		return 0, nil, errReloading(sessionID)
	}
	return d.State().Head, s.changed, nil
}

// errReloading: a session whose last append failed could not be reloaded
// from the log either (the store is failing).
func errReloading(sessionID string) error {
	return fmt.Errorf("session %s: its last append failed and the log cannot be read to reload it; try again", sessionID)
}
