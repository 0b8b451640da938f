package temporal

import (
	"context"
	"fmt"
	"log/slog"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// ForkSession creates a history fork in the hosted store and starts its
// workflow. The fork has no session.opened of its own: the workflow
// rehydrates its state from the fork's effective log (the source's events
// up to the fork point, then its own), starting from the checkpoint made
// of at, the source's state at the fork point, when it is given.
func (g *Gateway) ForkSession(ctx context.Context, req store.ForkRequest, at *core.State) (core.Lifecycle, error) {
	// The id is chosen here: the fork's workflow is started under it.
	var err error
	if req.SessionID, err = runtime.SessionIDOrNew(req.SessionID, g.NewID); err != nil {
		return core.Lifecycle{}, err
	}
	life, err := runtime.ForkSession(ctx, g.store, g.store, g.store, req, at, g.NewID, slog.Default().With("universe", g.universe))
	if err != nil {
		return core.Lifecycle{}, err
	}
	if err := g.startWorkflow(ctx, req.SessionID); err != nil {
		return core.Lifecycle{}, err
	}
	return life, nil
}

// Resume starts the workflow of a session written to the store by other
// means (an import), so it drives the work the session left unfinished.
func (g *Gateway) Resume(ctx context.Context, sessionID string) error {
	return g.startWorkflow(ctx, sessionID)
}

// startWorkflow starts the session's workflow unless it is running.
func (g *Gateway) startWorkflow(ctx context.Context, sessionID string) error {
	args := g.args
	args.Universe, args.SessionID = g.universe, sessionID
	if _, err := g.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: WorkflowID(g.universe, sessionID), TaskQueue: g.queue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, WorkflowName, args); err != nil {
		return fmt.Errorf("starting session workflow: %w", err)
	}
	return nil
}

// DeleteSession deletes a closed session (with cascade, the closed tree of
// its history forks) from the hosted store and drops the gateway's cached
// states of them. A closed session's workflow has already ended.
func (g *Gateway) DeleteSession(ctx context.Context, sessionID string, cascade bool) ([]string, error) {
	ids, err := runtime.DeleteSession(ctx, g.store, sessionID, cascade)
	if err != nil {
		return nil, err
	}
	g.cache.forget(g.universe, ids)
	return ids, nil
}

// forget drops the cached states of the sessions, so an id used again
// starts from its new log.
func (c *stateCache) forget(universe string, sessionIDs []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range sessionIDs {
		delete(c.entries, universe+"/"+id)
	}
}
