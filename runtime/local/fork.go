package local

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// ForkSession creates a history fork: req.SessionID (empty: a fresh id)
// inherits req.Source's events 1..req.AtSeq, read through the source. at,
// when set, is the source's state at the fork point; it is recorded as the
// fork's first checkpoint (under the fork's id), so loading the fork costs
// the same whatever the source's length. After this the fork is an
// ordinary session: it is loaded from its log on first use.
func (h *Host) ForkSession(ctx context.Context, req store.ForkRequest, at *core.State) (core.Lifecycle, error) {
	if h.ctx.Err() != nil {
		return core.Lifecycle{}, ErrHostClosed
	}
	cat, ok := h.opt.Log.(store.Catalog)
	if !ok {
		return core.Lifecycle{}, runtime.ErrNoCatalog
	}
	if req.SessionID == "" {
		req.SessionID = h.opt.NewID("s_")
	}
	if err := runtime.ValidateSessionID(req.SessionID); err != nil {
		return core.Lifecycle{}, err
	}
	life, err := cat.Fork(ctx, req)
	if errors.Is(err, store.ErrSessionExists) {
		return core.Lifecycle{}, &core.Rejection{Kind: core.RejectSessionExists, Message: fmt.Sprintf("session %s already exists", req.SessionID)}
	}
	if err != nil {
		return core.Lifecycle{}, err
	}
	if err := runtime.ForkCheckpoint(ctx, h.opt.Checkpoints, h.opt.Blobs, req, at); err != nil {
		// The log is authoritative: the fork loads by replay instead.
		h.opt.Logger.Warn("writing a fork's first checkpoint failed", "session", req.SessionID, "err", err)
	}
	return life, nil
}

// DeleteSession deletes a closed session (with cascade, the closed tree of
// its history forks) from the store, then forgets what the host holds of
// them. It returns the deleted ids.
func (h *Host) DeleteSession(ctx context.Context, sessionID string, cascade bool) ([]string, error) {
	if h.ctx.Err() != nil {
		return nil, ErrHostClosed
	}
	cat, ok := h.opt.Log.(store.Catalog)
	if !ok {
		return nil, runtime.ErrNoCatalog
	}
	ids, err := cat.DeleteSession(ctx, sessionID, cascade)
	if err != nil {
		return nil, err
	}
	var gone []*session
	h.mu.Lock()
	for _, id := range ids {
		if s := h.sessions[id]; s != nil {
			gone = append(gone, s)
			delete(h.sessions, id)
		}
	}
	h.mu.Unlock()
	// Long-polling readers of a deleted session wake now and find it gone,
	// rather than waiting out their wait. Out of the map, the session is
	// no eviction's to close; a commit (none can follow a close) would
	// swap the channel under s.mu as this does.
	for _, s := range gone {
		s.mu.Lock()
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
	}
	return ids, nil
}
