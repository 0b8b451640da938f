package local

import (
	"context"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// ForkSession creates a history fork (runtime.ForkSession): req.SessionID
// (empty: a fresh id) inherits req.Source's events 1..req.AtSeq. at, when
// set, is the source's state at the fork point, recorded as the fork's
// first checkpoint. The fork is then an ordinary session: it is loaded
// from its log on first use.
func (h *Host) ForkSession(ctx context.Context, req store.ForkRequest, at *core.State) (core.Lifecycle, error) {
	if h.ctx.Err() != nil {
		return core.Lifecycle{}, ErrHostClosed
	}
	return runtime.ForkSession(ctx, h.opt.Log, h.opt.Checkpoints, h.opt.Blobs, req, at, h.opt.NewID, h.opt.Logger)
}

// DeleteSession deletes a closed session (with cascade, the closed tree of
// its history forks) from the store, then forgets what the host holds of
// them. It returns the deleted ids.
func (h *Host) DeleteSession(ctx context.Context, sessionID string, cascade bool) ([]string, error) {
	if h.ctx.Err() != nil {
		return nil, ErrHostClosed
	}
	ids, err := runtime.DeleteSession(ctx, h.opt.Log, sessionID, cascade)
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
