package temporal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// Store is what activities need of a universe's store.
type Store interface {
	store.SessionLog
	blob.Store
	runtime.Files
	store.Checkpoints
}

// Stores opens the store of a universe (cached by the caller's implementation).
type Stores func(ctx context.Context, universe string) (Store, error)

// Activities are the effect executors as Temporal activities.
type Activities struct {
	Stores   Stores
	Adapters map[string]provider.Adapter
	Tools    *runtime.Tools
	cache    *stateCache
	// pieces are the lowered entries and stored segment chunks this
	// worker's generations share (runtime.Executor.Pieces).
	pieces *provider.Pieces
	// deltas publishes the pieces of streaming answers for the gateways.
	deltas deltaSender
	// Retry paces retries of retryable provider errors (zero: the
	// defaults, a budget of runtime.DefaultRetryBudget).
	Retry runtime.ProviderRetry
	// Observer hears the provider calls and the appends of this worker's
	// activities (nil: nobody).
	Observer runtime.Observer

	// Transcriber transcribes audio input (nil: runs with audio fail).
	Transcriber runtime.Transcriber
	// MCP are the MCP servers sessions may take tools from (nil: none).
	MCP runtime.MCPServers
	// Client and Queue start sub-agents' session workflows (agent_run);
	// without a client, agent_run answers that sub-agents cannot run.
	Client client.Client
	Queue  string
}

// NewActivities returns the activities over stores, adapters and tools.
func NewActivities(stores Stores, adapters map[string]provider.Adapter, tools *runtime.Tools) *Activities {
	return &Activities{Stores: stores, Adapters: adapters, Tools: tools, cache: newStateCache(1024),
		pieces: provider.NewPieces(runtime.DefaultPiecesBytes)}
}

// Error types the workflow branches on.
const (
	errRetryableProvider = "provider_retryable"
	errAppendConflict    = "append_conflict"
	errMissingBlob       = "missing_blob"
)

func (a *Activities) store(ctx context.Context, universe string) (Store, error) {
	st, err := a.Stores(ctx, universe)
	if err != nil {
		return nil, fmt.Errorf("universe %s: %w", universe, err)
	}
	return st, nil
}

// Rehydrate rebuilds the session's state from its latest usable checkpoint
// and the events after it (or its whole log) and returns it as a
// checkpoint. It also stores the constant blobs every host needs.
func (a *Activities) Rehydrate(ctx context.Context, in RehydrateIn) (RehydrateOut, error) {
	st, err := a.store(ctx, in.Universe)
	if err != nil {
		return RehydrateOut{}, err
	}
	stop := heartbeat(ctx) // a long log takes a while; a dead worker is noticed in a heartbeat timeout
	defer stop()
	for _, b := range core.ConstantBlobs() {
		if _, err := st.Put(ctx, b); err != nil {
			return RehydrateOut{}, err
		}
	}
	logger := slog.Default().With("universe", in.Universe)
	state, err := runtime.LoadState(ctx, st, st, st, in.SessionID, logger)
	var corrupt *core.CorruptError
	switch {
	case errors.Is(err, store.ErrSessionNotFound):
		return RehydrateOut{}, nil
	case errors.Is(err, runtime.ErrHistoryIncomplete):
		return RehydrateOut{}, temporal.NewNonRetryableApplicationError(err.Error(), runtime.KindHistoryIncomplete, err)
	case errors.As(err, &corrupt):
		return RehydrateOut{}, temporal.NewNonRetryableApplicationError(err.Error(), "corrupt_log", err)
	case err != nil:
		return RehydrateOut{}, err
	}
	cp, err := core.EncodeCheckpoint(state)
	if err != nil || len(cp) <= RehydrateInline {
		return RehydrateOut{Checkpoint: cp}, err
	}
	// Too large to cross whole: store the chunks (the grace period holds
	// them until the workflow has read them) and return the index.
	parts, err := core.EncodeCheckpointParts(state, nil)
	if err != nil {
		return RehydrateOut{}, err
	}
	for _, b := range parts.New {
		if _, err := st.Put(ctx, b.Data); err != nil {
			return RehydrateOut{}, err
		}
	}
	return RehydrateOut{Index: parts.Index}, nil
}

// ReadCheckpointChunks returns the bytes of the first chunks named, as many
// as fit in ReadChunksBytes (always at least one).
func (a *Activities) ReadCheckpointChunks(ctx context.Context, in ReadChunksIn) (ReadChunksOut, error) {
	st, err := a.store(ctx, in.Universe)
	if err != nil {
		return ReadChunksOut{}, err
	}
	var out ReadChunksOut
	size := 0
	for _, d := range in.Digests {
		data, err := st.Get(ctx, d)
		if err != nil {
			return ReadChunksOut{}, err
		}
		if len(out.Chunks) > 0 && size+len(data) > ReadChunksBytes {
			break
		}
		out.Chunks = append(out.Chunks, data)
		size += len(data)
	}
	return out, nil
}

// Append stores proposals. A retry after a crash that happened between the
// commit and the report finds its own events at the expected seqs and
// succeeds without writing them again.
func (a *Activities) Append(ctx context.Context, in AppendIn) (AppendOut, error) {
	st, err := a.store(ctx, in.Universe)
	if err != nil {
		return AppendOut{}, err
	}
	events, err := st.Append(ctx, in.SessionID, in.ExpectedHead, in.Proposals)
	if err == nil && a.Observer != nil {
		a.Observer.Committed(in.SessionID, events)
	}
	if errors.Is(err, store.ErrHeadConflict) {
		if stored, rerr := a.alreadyAppended(ctx, st, in); rerr != nil {
			return AppendOut{}, rerr
		} else if stored != nil {
			return AppendOut{Head: in.ExpectedHead + int64(len(in.Proposals)), ObservedAtMs: stored}, nil
		}
		return AppendOut{}, temporal.NewNonRetryableApplicationError(err.Error(), errAppendConflict, err)
	}
	var missing *blob.MissingError
	if errors.As(err, &missing) {
		return AppendOut{}, temporal.NewNonRetryableApplicationError(err.Error(), errMissingBlob, err)
	}
	if err != nil {
		return AppendOut{}, err
	}
	return AppendOut{Head: in.ExpectedHead + int64(len(in.Proposals))}, nil
}

// alreadyAppended returns the stored events' times when the log already
// holds exactly these proposals after the expected head, but for their
// times: a workflow task appended them and was lost before it completed,
// and the task that replaces it decided the same (its clock reads later).
// Payloads carry the revisions and entry ids they were decided on, so equal
// payloads at the same head are the same decisions. Nil otherwise.
func (a *Activities) alreadyAppended(ctx context.Context, st Store, in AppendIn) ([]int64, error) {
	evs, err := st.ReadAfter(ctx, in.SessionID, in.ExpectedHead, len(in.Proposals))
	if err != nil || len(evs) != len(in.Proposals) {
		return nil, err
	}
	times := make([]int64, len(evs))
	for i, p := range in.Proposals {
		ev := evs[i]
		if ev.Kind != p.Kind || ev.Version != p.Version || !slices.Equal(ev.Joins, p.Joins) || !bytes.Equal(ev.Payload, p.Payload) {
			return nil, nil
		}
		times[i] = ev.ObservedAtMs
	}
	return times, nil
}

// Generate makes one provider attempt for a planned turn. Retryable provider
// errors fail the attempt (Temporal retries, after the provider's
// Retry-After when it gave one); a terminal one completes the activity with a
// failed result, so the turn fails and the workflow does not.
func (a *Activities) Generate(ctx context.Context, in GenerateIn) (core.GenerationResult, error) {
	st, err := a.store(ctx, in.Universe)
	if err != nil {
		return core.GenerationResult{}, err
	}
	var w core.GenerateWork
	err = a.cache.with(ctx, st, in.Universe, in.SessionID, in.Head, func(s *core.State) error {
		r := s.ActiveRun()
		if r == nil || r.ID != in.RunID || r.Turn == nil || r.Turn.N != in.Turn || r.Turn.Completed {
			return fmt.Errorf("run %s turn %d is not open at seq %d", in.RunID, in.Turn, in.Head)
		}
		w = core.GenerateWork{RunID: in.RunID, Turn: in.Turn, ContextRevision: r.Turn.ContextRevision,
			Fingerprint: in.Fingerprint, Config: s.Config, Entries: s.Context(), LastSegments: s.LastSegments}
		return nil
	})
	if err != nil {
		return core.GenerationResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "stale_work", err)
	}
	stop := heartbeat(ctx)
	defer stop()
	// Files holds the edges of a long segment list's chunks: without it
	// every turn would store its whole list again.
	x := &runtime.Executor{Blobs: st, Adapters: a.Adapters, Tools: a.Tools, Files: st, Pieces: a.pieces, Observer: a.Observer}
	if bus, ok := st.(deltaBus); ok {
		x.OnDelta = a.deltas.sink(bus)
	}
	res, err := x.Generate(ctx, in.SessionID, w)
	var pe *provider.Error
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil:
		return core.GenerationResult{}, ctx.Err()
	case errors.As(err, &pe) && pe.Retryable:
		retry, final := a.retryProvider(ctx, pe, pe.Error())
		if final != nil {
			return runtime.FailedGeneration(w, final), nil
		}
		return core.GenerationResult{}, retry
	case errors.As(err, &pe), errors.Is(err, runtime.ErrFingerprintMismatch),
		errors.Is(err, endpoint.ErrMissingKey), errors.Is(err, endpoint.ErrUnknownProvider), errors.Is(err, endpoint.ErrConfig):
		return runtime.FailedGeneration(w, err), nil
	}
	return core.GenerationResult{}, err // a runtime hiccup (store, network to CAS): retried
}

// Compact runs the compactor on a pending compaction. Retryable provider
// errors fail the attempt (Temporal retries); a terminal one completes the
// activity with a failed result, so the compaction fails and the entries stay.
func (a *Activities) Compact(ctx context.Context, in CompactIn) (core.CompactionResult, error) {
	st, err := a.store(ctx, in.Universe)
	if err != nil {
		return core.CompactionResult{}, err
	}
	var w core.CompactWork
	err = a.cache.with(ctx, st, in.Universe, in.SessionID, in.Head, func(s *core.State) error {
		p := s.Compaction
		if p == nil || p.ID != in.CompactionID || p.ContextRevision != in.ContextRevision {
			return fmt.Errorf("compaction %s is not pending at seq %d", in.CompactionID, in.Head)
		}
		w = *s.PendingCompactWork()
		return nil
	})
	if err != nil {
		return core.CompactionResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "stale_work", err)
	}
	stop := heartbeat(ctx)
	defer stop()
	x := &runtime.Executor{Blobs: st, Adapters: a.Adapters, Tools: a.Tools, Files: st}
	res, err := x.Compact(ctx, in.SessionID, w)
	var pe *provider.Error
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil:
		return core.CompactionResult{}, ctx.Err()
	case errors.As(err, &pe) && pe.Retryable:
		retry, final := a.retryProvider(ctx, pe, pe.Error())
		if final != nil {
			return runtime.FailedCompaction(w, final), nil
		}
		return core.CompactionResult{}, retry
	case errors.As(err, &pe), errors.Is(err, endpoint.ErrMissingKey), errors.Is(err, endpoint.ErrUnknownProvider), errors.Is(err, endpoint.ErrConfig):
		return runtime.FailedCompaction(w, err), nil
	}
	return core.CompactionResult{}, err
}

// Checkpoint stores a reducer checkpoint of the session's state at Head
// and prunes the older ones.
func (a *Activities) Checkpoint(ctx context.Context, in CheckpointIn) error {
	st, err := a.store(ctx, in.Universe)
	if err != nil {
		return err
	}
	return a.cache.with(ctx, st, in.Universe, in.SessionID, in.Head, func(s *core.State) error {
		return runtime.WriteCheckpoint(ctx, st, st, s)
	})
}

// Refresh derives the material of a session's linked files (instructions,
// skill catalog, agent menu), stores it and returns entries pointing at it.
// A link to a workspace or snapshot the universe lacks is a typed rejection.
func (a *Activities) Refresh(ctx context.Context, in RefreshIn) (RefreshOut, error) {
	st, err := a.store(ctx, in.Universe)
	if err != nil {
		return RefreshOut{}, err
	}
	x := &runtime.Executor{Blobs: st, Adapters: a.Adapters, Tools: a.Tools, Files: st, MCP: a.MCP,
		Logger: slog.Default().With("universe", in.Universe)}
	out, err := x.Refresh(ctx, core.SessionConfig{Links: in.Links, Tools: in.MCPGrants, MCPCatalog: in.MCPCatalog}, in.AgentMenu)
	var rej *core.Rejection
	if errors.As(err, &rej) {
		return RefreshOut{}, temporal.NewNonRetryableApplicationError(rej.Message, rejectionPrefix+rej.Kind, nil)
	}
	return out, err
}

// InvokeTool runs one tool call and stores its output.
//
// On error it returns no result: the SDK encodes a result even next to an
// error, and a result without a stored output has a zero ContentRef, which
// does not encode; Temporal would then record that encoding error instead of
// the real one.
func (a *Activities) InvokeTool(ctx context.Context, in ToolIn) (*core.ToolResult, error) {
	st, err := a.store(ctx, in.Universe)
	if err != nil {
		return nil, err
	}
	stop := heartbeat(ctx)
	defer stop()
	x := &runtime.Executor{Blobs: st, Adapters: a.Adapters, Tools: a.Tools, Files: st, MCP: a.MCP,
		Logger: slog.Default().With("universe", in.Universe)}
	if a.Client != nil {
		var args SessionArgs
		if in.ChildArgs != nil {
			args = *in.ChildArgs
		}
		x.Children = activityChildren{g: NewGateway(a.Client, a.Queue, in.Universe, st, args)}
	}
	res, err := x.InvokeTool(ctx, runtime.ToolSession{ID: in.SessionID, Links: in.Links, MCP: in.MCP, Config: in.Config, Depth: in.Depth, AgentSlot: in.AgentSlot}, in.RunID, in.Turn, in.Call)
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// heartbeat reports liveness while a long call runs, so a cancelled run's
// activity learns of the cancellation and a dead worker's call is retried
// after the heartbeat timeout rather than the whole start-to-close timeout.
//
// The first heartbeat goes after a second: one sent at the start is still in
// flight when a short call returns and fails with the activity's cancelled
// context (a warning the SDK logged for nearly every short call).
func heartbeat(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			activity.RecordHeartbeat(ctx)
		}
	}()
	return func() { close(done) }
}
