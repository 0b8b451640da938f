package local

import (
	"context"
	"errors"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

var _ runtime.Children = (*Host)(nil)

// RunChild implements runtime.Children with runtime.RunChildOn: the child
// is a session of this host.
func (h *Host) RunChild(ctx context.Context, c runtime.ChildRun) (runtime.ChildResult, error) {
	return runtime.RunChildOn(ctx, childHost{h}, c)
}

// childHost is the host as runtime.RunChildOn sees it.
type childHost struct{ *Host }

func (h childHost) OpenChild(ctx context.Context, id string, cfg core.SessionConfig, instructions *core.EntryInput, parent core.ParentRef) error {
	if _, err := h.opt.Log.Session(ctx, id); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrSessionNotFound) {
		return err
	}
	_, err := h.createSession(ctx, id, cfg, instructions, &parent)
	var rej *core.Rejection
	if errors.As(err, &rej) && rej.Kind == core.RejectSessionExists {
		return nil // opened meanwhile
	}
	return err
}

func (h childHost) Changed(ctx context.Context, sessionID string) (<-chan struct{}, error) {
	s, err := h.session(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	defer h.release(s)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed, nil
}

func (h childHost) Stopping() bool { return h.ctx.Err() != nil }
