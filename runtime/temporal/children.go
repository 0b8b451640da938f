package temporal

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// activityChildren runs an agent_run call's sub-agent from the InvokeTool
// activity: the child is a session of the universe, so its own workflow,
// started and followed through the gateway. The activity heartbeats while
// it waits; if its worker dies, another worker's retry finds the same
// child and run (runtime.RunChildOn).
type activityChildren struct{ g *Gateway }

func (c activityChildren) RunChild(ctx context.Context, run runtime.ChildRun) (runtime.ChildResult, error) {
	return runtime.RunChildOn(ctx, gatewayChildHost{Gateway: c.g, stop: activity.GetWorkerStopChannel(ctx)}, run)
}

// gatewayChildHost is the gateway as runtime.RunChildOn sees it.
type gatewayChildHost struct {
	*Gateway
	stop <-chan struct{} // the worker's: closed when it stops
}

func (h gatewayChildHost) OpenChild(ctx context.Context, id string, cfg core.SessionConfig, instructions *core.EntryInput, parent core.ParentRef) error {
	if _, err := h.store.Session(ctx, id); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrSessionNotFound) {
		return err
	}
	_, err := h.update(ctx, id, core.OpenSession{AtMs: h.NowMs(), SessionID: id, Config: cfg, Instructions: instructions, Parent: &parent})
	var rej *core.Rejection
	if errors.As(err, &rej) && rej.Kind == core.RejectSessionExists {
		return nil // opened meanwhile
	}
	return err
}

func (h gatewayChildHost) Changed(ctx context.Context, sessionID string) (<-chan struct{}, error) {
	_, ch, err := h.Gateway.Changed(ctx, sessionID)
	return ch, err
}

func (h gatewayChildHost) Stopping() bool {
	select {
	case <-h.stop:
		return true
	default:
		return false
	}
}
