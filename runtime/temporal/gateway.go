package temporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// Gateway is the API's host for one universe when sessions run on Temporal:
// commands go to the session's workflow as updates; reads come from the
// hosted store (events, blobs) or the workflow's status query.
type Gateway struct {
	client   client.Client
	queue    string
	universe string
	store    Store
	args     SessionArgs // template: timeouts and limits for new workflows
	cache    *stateCache
	poll     time.Duration
	deltas   *deltaListener // pieces of streaming answers, for watchers
}

// NewGateway returns the gateway of a universe.
func NewGateway(c client.Client, queue, universe string, st Store, args SessionArgs) *Gateway {
	return &Gateway{client: c, queue: queue, universe: universe, store: st, args: args, cache: newStateCache(256), poll: 100 * time.Millisecond,
		deltas: &deltaListener{hub: runtime.NewDeltaHub()}}
}

// Blobs is the universe's content store.
func (g *Gateway) Blobs() blob.Store { return g.store }

// Files is the universe's workspaces and snapshots.
func (g *Gateway) Files() runtime.Files { return g.store }

// Log is the universe's session log.
func (g *Gateway) Log() store.SessionLog { return g.store }

// NewID returns a fresh id.
func (g *Gateway) NewID(prefix string) string { return runtime.RandomID(prefix) }

// NowMs is the gateway's clock.
func (g *Gateway) NowMs() int64 { return time.Now().UnixMilli() }

// CreateSession starts the session's workflow and opens the session in it.
func (g *Gateway) CreateSession(ctx context.Context, id string, cfg core.SessionConfig, instructions *core.EntryInput) (string, error) {
	id, err := runtime.SessionIDOrNew(id, g.NewID)
	if err != nil {
		return "", err
	}
	_, err = g.update(ctx, id, core.OpenSession{AtMs: g.NowMs(), SessionID: id, Config: cfg, Instructions: instructions})
	return id, err
}

// Submit sends a command to the session's workflow, starting it if it is not
// running, and returns the admission.
func (g *Gateway) Submit(ctx context.Context, sessionID string, cmd core.Command) (core.Admission, error) {
	if _, err := g.store.Session(ctx, sessionID); err != nil {
		return core.Admission{}, err
	}
	res, err := g.update(ctx, sessionID, cmd)
	if err != nil {
		return core.Admission{}, err
	}
	return core.Admission{RunID: res.RunID, Status: res.Status, Duplicate: res.Duplicate, Revision: res.Revision, EntryIDs: res.EntryIDs, ConfigPending: res.ConfigPending}, nil
}

func (g *Gateway) update(ctx context.Context, sessionID string, cmd core.Command) (SubmitResult, error) {
	wire, err := WrapCommand(cmd)
	if err != nil {
		return SubmitResult{}, err
	}
	args := g.args
	args.Universe, args.SessionID = g.universe, sessionID
	id := WorkflowID(g.universe, sessionID)
	if _, err := g.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: g.queue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, WorkflowName, args); err != nil {
		return SubmitResult{}, fmt.Errorf("starting session workflow: %w", err)
	}
	handle, err := g.client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: UpdateSubmit, Args: []any{wire}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return SubmitResult{}, asRejection(err)
	}
	var res SubmitResult
	if err := handle.Get(ctx, &res); err != nil {
		return SubmitResult{}, asRejection(err)
	}
	return res, nil
}

// asRejection turns a workflow's typed rejection back into a *core.Rejection.
func asRejection(err error) error {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || len(appErr.Type()) <= len(rejectionPrefix) || appErr.Type()[:len(rejectionPrefix)] != rejectionPrefix {
		return err
	}
	rej := &core.Rejection{Kind: appErr.Type()[len(rejectionPrefix):], Message: appErr.Message()}
	if appErr.HasDetails() {
		var expected, actual *int64
		if appErr.Details(&expected, &actual) == nil {
			rej.Expected, rej.Actual = expected, actual
		}
	}
	return rej
}

// statusQueryTimeout bounds the status query: with no worker up, Temporal
// holds a query until the caller gives up.
const statusQueryTimeout = 3 * time.Second

// Status asks the session's workflow for its status (no log read). When no
// worker answers (all down, or the workflow cannot run), it answers from
// the store instead: the state of the latest checkpoint and the events
// after it, with AsOfSeq set.
func (g *Gateway) Status(ctx context.Context, sessionID string) (Status, error) {
	if _, err := g.store.Session(ctx, sessionID); err != nil {
		return Status{}, err
	}
	qctx, cancel := context.WithTimeout(ctx, statusQueryTimeout)
	defer cancel()
	v, err := g.client.QueryWorkflow(qctx, WorkflowID(g.universe, sessionID), "", QueryStatus)
	if err == nil {
		var st Status
		if err = v.Get(&st); err == nil {
			return st, nil
		}
	}
	if ctx.Err() != nil {
		return Status{}, ctx.Err()
	}
	return g.storedStatus(ctx, sessionID)
}

// storedStatus is the session's status rebuilt from the store.
func (g *Gateway) storedStatus(ctx context.Context, sessionID string) (Status, error) {
	st, err := runtime.LoadState(ctx, g.store, g.store, g.store, sessionID, slog.Default().With("universe", g.universe))
	if err != nil {
		return Status{}, err
	}
	out := statusOf(st)
	out.AsOfSeq = st.Head
	return out, nil
}

// Inspect runs fn on the session's state rebuilt from the log (only the
// events since the gateway's last look are read).
func (g *Gateway) Inspect(ctx context.Context, sessionID string, fn func(*core.State)) error {
	life, err := g.store.Session(ctx, sessionID)
	if err != nil {
		return err
	}
	return g.cache.with(ctx, g.store, g.universe, sessionID, life.Head, func(s *core.State) error {
		fn(s)
		return nil
	})
}

// appendWaiter is a store that signals appends (PostgreSQL LISTEN/NOTIFY).
type appendWaiter interface {
	WaitAppend(ctx context.Context, sessionID string) (<-chan struct{}, error)
}

// Changed returns the session's head and a channel closed once the log
// (probably) moved past it; a waiter reads the head again when it wakes.
// The gateway shares no memory with the workers: a store that signals
// appends wakes it, others are polled. Either way the watch ends with ctx,
// so a long-poll whose client left stops costing anything.
func (g *Gateway) Changed(ctx context.Context, sessionID string) (int64, <-chan struct{}, error) {
	var ch <-chan struct{}
	if w, ok := g.store.(appendWaiter); ok {
		// Wait first, then read the head: an append in between wakes us.
		var err error
		if ch, err = w.WaitAppend(ctx, sessionID); err != nil {
			return 0, nil, err
		}
	}
	life, err := g.store.Session(ctx, sessionID)
	if err != nil {
		return 0, nil, err
	}
	if ch == nil {
		ch = g.pollHead(ctx, sessionID, life.Head)
	}
	return life.Head, ch, nil
}

// pollHead closes its channel when the session's head moves past head, the
// session is gone, or ctx ends.
func (g *Gateway) pollHead(ctx context.Context, sessionID string, head int64) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		t := time.NewTicker(g.poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			cur, err := g.store.Session(ctx, sessionID)
			if err != nil || cur.Head != head {
				return
			}
		}
	}()
	return ch
}
