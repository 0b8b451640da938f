package temporal

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
)

// Defaults of the session workflow.
const (
	defaultHeartbeatTimeout   = 30 * time.Second
	defaultContinueAsNewAfter = 2000
)

// session is one workflow run's state: the core's drive, the work in flight
// and a flag the main loop waits on.
type session struct {
	args     SessionArgs
	drive    *core.Drive
	mu       workflow.Mutex
	inflight *runtime.InFlight
	dirty    bool
	// checkpointed is the head of the last checkpoint this run wrote;
	// checkpointing is set while one is being written.
	checkpointed  int64
	checkpointing bool
	// resultsPerCall: this workflow started before ordered results (see
	// versionOrderedResults).
	resultsPerCall bool
	// armed are the client calls whose deadline has a timer (see
	// armDeadlines).
	armed map[string]bool
	// held are the tickets of commands waiting to be admitted, in arrival
	// order; the front one goes next (see lockAfterCompaction).
	held       []int64
	nextTicket int64
}

// SessionWorkflow drives one session until it closes, continuing as new when
// idle with a long history.
func SessionWorkflow(ctx workflow.Context, args SessionArgs) error {
	s := &session{args: args, mu: workflow.NewMutex(ctx), inflight: runtime.NewInFlight()}
	// Handlers first: an update that arrives with the first workflow task
	// must find its handler; it waits there until the state is loaded.
	if err := workflow.SetQueryHandler(ctx, QueryStatus, s.status); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateSubmit, s.submit,
		workflow.UpdateHandlerOptions{Validator: s.validate}); err != nil {
		return err
	}
	// Workflows started before the core held a batch's results until the
	// batch ends replay with the core that applied each result at once.
	s.resultsPerCall = workflow.GetVersion(ctx, versionOrderedResults, workflow.DefaultVersion, 1) == workflow.DefaultVersion
	if err := s.rehydrate(ctx); err != nil {
		return err
	}
	for {
		if err := s.mu.Lock(ctx); err != nil {
			return err
		}
		s.pump(ctx)
		s.armDeadlines(ctx)
		closed := s.drive.State().Closed && s.inflight.Len() == 0
		due, head := !s.drive.Ahead() && s.checkpointDue(ctx)(s.drive.State(), s.checkpointed), s.drive.State().Head
		s.mu.Unlock()
		if due && !s.checkpointing && workflow.GetVersion(ctx, versionCheckpoint, workflow.DefaultVersion, 1) == 1 {
			s.checkpointing = true
			workflow.Go(ctx, func(gctx workflow.Context) { s.checkpoint(gctx, head) })
		}
		// Ending or continuing as new waits for handlers and for a checkpoint
		// in flight: completing with an activity outstanding fails the task.
		settled := func() bool { return workflow.AllHandlersFinished(ctx) && !s.checkpointing }
		if closed {
			return workflow.Await(ctx, settled)
		}
		if s.idle() && s.historyLong(ctx) {
			if err := workflow.Await(ctx, settled); err != nil {
				return err
			}
			if s.idle() {
				return workflow.NewContinueAsNewError(ctx, WorkflowName, args)
			}
		}
		if err := workflow.Await(ctx, func() bool { return s.dirty }); err != nil {
			return err
		}
		s.dirty = false
	}
}

// rehydrate rebuilds the drive from the log, through an activity.
func (s *session) rehydrate(ctx workflow.Context) error {
	var out RehydrateOut
	err := workflow.ExecuteActivity(s.shortActivity(ctx), "Rehydrate", RehydrateIn{Universe: s.args.Universe, SessionID: s.args.SessionID}).Get(ctx, &out)
	if err != nil {
		return err
	}
	state := core.NewState()
	switch {
	case len(out.Checkpoint) > 0:
		if state, err = core.DecodeCheckpoint(out.Checkpoint); err != nil {
			return err
		}
	case len(out.Index) > 0:
		// Only results of activities that know Index carry one, so
		// histories from before it replay down the first branch.
		if state, err = s.readChunked(ctx, out.Index); err != nil {
			return err
		}
	}
	if s.resultsPerCall {
		state.ApplyResultsPerCall()
	}
	s.drive = core.NewDrive(state)
	return nil
}

// versionOrderedResults marks workflow code whose core applies a tool
// batch's results when the batch ends, in call order.
const versionOrderedResults = "ordered-results"

// readChunked reads the pages and chunks of a chunked checkpoint index in
// batches and decodes the state it holds.
func (s *session) readChunked(ctx workflow.Context, index []byte) (*core.State, error) {
	have := map[content.Digest][]byte{}
	for {
		need, err := core.CheckpointNeeds(index, have)
		if err != nil {
			return nil, err
		}
		if len(need) == 0 {
			return core.DecodeCheckpointParts(index, have)
		}
		for next := 0; next < len(need); {
			var out ReadChunksOut
			in := ReadChunksIn{Universe: s.args.Universe, Digests: need[next:min(next+512, len(need))]}
			if err := workflow.ExecuteActivity(s.shortActivity(ctx), "ReadCheckpointChunks", in).Get(ctx, &out); err != nil {
				return nil, err
			}
			if len(out.Chunks) == 0 || len(out.Chunks) > len(in.Digests) {
				return nil, fmt.Errorf("read %d checkpoint chunks of %d asked for", len(out.Chunks), len(in.Digests))
			}
			for i, data := range out.Chunks {
				have[in.Digests[i]] = data
			}
			next += len(out.Chunks)
		}
	}
}

func (s *session) idle() bool {
	st := s.drive.State()
	return s.inflight.Len() == 0 && !st.HasWork()
}

func (s *session) historyLong(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	limit := s.args.ContinueAsNewAfter
	if limit <= 0 {
		limit = defaultContinueAsNewAfter
	}
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > limit
}

func nowMs(ctx workflow.Context) int64 { return workflow.Now(ctx).UnixMilli() }

// pump runs runtime.Pump on the session; a failed append is logged, and
// the next command or result pumps again. The caller holds s.mu.
func (s *session) pump(ctx workflow.Context) {
	if err := runtime.Pump(s.on(ctx)); err != nil {
		workflow.GetLogger(ctx).Error("append failed", "session", s.args.SessionID, "error", err)
	}
}

// sessionHost is the session as runtime's loop sees it, in one workflow
// context. Its user holds s.mu.
type sessionHost struct {
	s   *session
	ctx workflow.Context
}

func (s *session) on(ctx workflow.Context) sessionHost { return sessionHost{s: s, ctx: ctx} }

func (x sessionHost) Drive() *core.Drive               { return x.s.current(x.ctx) }
func (x sessionHost) NowMs() int64                     { return nowMs(x.ctx) }
func (x sessionHost) Append(in core.Intent) error      { return x.s.commit(x.ctx, in) }
func (x sessionHost) Generate(w core.GenerateWork)     { x.s.dispatchGenerate(x.ctx, w) }
func (x sessionHost) Compact(w core.CompactWork)       { x.s.dispatchCompact(x.ctx, w) }
func (x sessionHost) Transcribe(w core.TranscribeWork) { x.s.dispatchTranscribe(x.ctx, w) }
func (x sessionHost) InvokeTool(runID string, turn int, call core.ToolCall) {
	x.s.dispatchTool(x.ctx, runID, turn, call)
}

// commit appends one intent's proposals through the Append activity and
// applies them with the seqs the store gave them. A conflicting log (another
// writer) rebuilds the state from the log.
func (s *session) commit(ctx workflow.Context, in core.Intent) error {
	if workflow.GetVersion(ctx, versionChainedAppends, workflow.DefaultVersion, 1) == 1 {
		return s.commitChained(ctx)
	}
	var out AppendOut
	err := workflow.ExecuteLocalActivity(appendActivity(ctx), "Append", AppendIn{
		Universe: s.args.Universe, SessionID: s.args.SessionID, ExpectedHead: in.ExpectedHead, Proposals: in.Proposals,
	}).Get(ctx, &out)
	if err != nil {
		s.drive.Abandon()
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == errAppendConflict {
			if rerr := s.rehydrate(ctx); rerr != nil {
				return rerr
			}
		}
		return err
	}
	events := make([]core.Event, len(in.Proposals))
	for i, p := range in.Proposals {
		if len(out.ObservedAtMs) == len(in.Proposals) {
			p.ObservedAtMs = out.ObservedAtMs[i] // as stored by a lost task
		}
		events[i] = p.Committed(in.ExpectedHead + int64(i) + 1)
	}
	if err := s.drive.Committed(events); err != nil {
		return err
	}
	s.dirty = true
	s.inflight.CancelStale(s.drive.State())
	return nil
}

func (s *session) dispatchGenerate(ctx workflow.Context, w core.GenerateWork) {
	work := core.Work{RunID: w.RunID, Turn: w.Turn}
	key := work.Key()
	if s.inflight.Get(key) != nil {
		return
	}
	actCtx, cancel := workflow.WithCancel(s.providerActivity(ctx))
	s.inflight.Add(work, cancel)
	in := GenerateIn{Universe: s.args.Universe, SessionID: s.args.SessionID, Head: s.drive.State().Head,
		RunID: w.RunID, Turn: w.Turn, Fingerprint: w.Fingerprint}
	workflow.Go(ctx, func(gctx workflow.Context) {
		var res core.GenerationResult
		err := workflow.ExecuteActivity(actCtx, "Generate", in).Get(gctx, &res)
		if err != nil {
			res = failedGeneration(w, err)
		}
		s.deliver(gctx, key, res)
	})
}

// failedGeneration is the result of a generation whose attempts ran out:
// runtime.FailedGeneration's, which an activity error (no provider or
// endpoint error in Go form) leaves at the boundary failure; a provider
// error that stayed retryable to the last attempt is a provider_error, as
// in the embedded host.
func failedGeneration(w core.GenerateWork, err error) core.GenerationResult {
	res := runtime.FailedGeneration(w, err)
	if msg, ok := retryableProviderMessage(err); ok {
		res.Failure = &core.Failure{Kind: "provider_error", Message: msg}
	}
	return res
}

// failedCompaction is the result of a compaction whose attempts ran out:
// it fails and every entry stays.
func failedCompaction(w core.CompactWork, err error) core.CompactionResult {
	res := runtime.FailedCompaction(w, err)
	if msg, ok := retryableProviderMessage(err); ok {
		res.Failure.Message = msg
	}
	return res
}

// retryableProviderMessage is the provider's message when err is an
// activity's retryable provider error whose attempts ran out.
func retryableProviderMessage(err error) (string, bool) {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == errRetryableProvider {
		return appErr.Message(), true
	}
	return "", false
}

// dispatchCompact runs the pending standalone compaction as an activity;
// when its attempts run out the compaction fails and every entry stays.
func (s *session) dispatchCompact(ctx workflow.Context, w core.CompactWork) {
	work := core.Work{CompactionID: w.CompactionID}
	key := work.Key()
	if s.inflight.Get(key) != nil {
		return
	}
	actCtx, cancel := workflow.WithCancel(s.providerActivity(ctx))
	s.inflight.Add(work, cancel)
	in := CompactIn{Universe: s.args.Universe, SessionID: s.args.SessionID, Head: s.drive.State().Head,
		CompactionID: w.CompactionID, ContextRevision: w.ContextRevision}
	workflow.Go(ctx, func(gctx workflow.Context) {
		var res core.CompactionResult
		if err := workflow.ExecuteActivity(actCtx, "Compact", in).Get(gctx, &res); err != nil {
			res = failedCompaction(w, err)
		}
		s.deliver(gctx, key, res)
	})
}

func (s *session) dispatchTool(ctx workflow.Context, runID string, turn int, call core.ToolCall) {
	work := core.Work{RunID: runID, Turn: turn, CallID: call.CallID}
	key := work.Key()
	if s.inflight.Get(key) != nil {
		return
	}
	opts := s.longActivity(ctx, 3)
	if call.Name == runtime.AgentRunTool {
		// A sub-agent's run may take hours; the activity heartbeats while
		// it waits, so a dead worker is still noticed in seconds.
		opts = workflow.WithStartToCloseTimeout(opts, 24*time.Hour)
	}
	actCtx, cancel := workflow.WithCancel(opts)
	s.inflight.Add(work, cancel)
	sess := runtime.ToolSessionFor(s.drive.State(), call)
	in := ToolIn{Universe: s.args.Universe, SessionID: s.args.SessionID, RunID: runID, Turn: turn, Call: call,
		Links: sess.Links, MCP: sess.MCP, Config: sess.Config, Depth: sess.Depth, AgentSlot: sess.AgentSlot}
	if call.Name == runtime.AgentRunTool {
		args := s.args
		args.Universe, args.SessionID = "", ""
		in.ChildArgs = &args
	}
	workflow.Go(ctx, func(gctx workflow.Context) {
		var res core.ToolResult
		if err := workflow.ExecuteActivity(actCtx, "InvokeTool", in).Get(gctx, &res); err != nil {
			res = runtime.FailedToolCall(runID, turn, call)
		}
		s.deliver(gctx, key, res)
	})
}

// deliver admits a finished activity's result; the result of cancelled work
// is discarded.
func (s *session) deliver(ctx workflow.Context, key string, cmd core.Command) {
	if err := s.mu.Lock(ctx); err != nil {
		return
	}
	defer s.mu.Unlock()
	if !s.inflight.Remove(key) {
		return
	}
	cmd = runtime.AtTime(cmd, nowMs(ctx))
	_, err := runtime.AdmitAndAppend(s.on(ctx), cmd)
	if neverAdmitted(err) && workflow.GetVersion(ctx, versionFailUnadmitted, workflow.DefaultVersion, 1) == 1 {
		// Running the work again would only repeat it (a paid model call
		// each time), so its run fails instead.
		workflow.GetLogger(ctx).Error("result not admitted; failing its run", "session", s.args.SessionID, "work", key, "error", err)
		if fail := runtime.Unadmitted(cmd, err); fail != nil {
			if _, err := runtime.AdmitAndAppend(s.on(ctx), runtime.AtTime(fail, nowMs(ctx))); err != nil {
				workflow.GetLogger(ctx).Error("failing the run was not admitted either", "session", s.args.SessionID, "work", key, "error", err)
			}
		}
	} else if err != nil {
		workflow.GetLogger(ctx).Info("result not admitted", "work", key, "error", err)
	}
	s.dirty = true
}

// validate rejects a command before it is accepted into history. Before the
// state is loaded it lets the command through; submit decides then.
func (s *session) validate(ctx workflow.Context, cmd Command) error {
	c, err := cmd.Unwrap()
	if err != nil || s.drive == nil {
		return err
	}
	_, err = core.Admit(s.drive.State(), c)
	var rej *core.Rejection
	if errors.As(err, &rej) && rej.Kind == core.RejectCompactionPending {
		return nil // the handler holds it until the compaction ends
	}
	return rejectionError(err)
}

// submit admits a client command and appends its events before answering.
func (s *session) submit(ctx workflow.Context, cmd Command) (SubmitResult, error) {
	c, err := cmd.Unwrap()
	if err != nil {
		return SubmitResult{}, err
	}
	// A ticket is taken first thing: handlers start in the order their
	// updates arrived, so tickets keep it (the mutex alone does not).
	var ticket int64
	if runtime.Holdable(c) && workflow.GetVersion(ctx, versionArrivalOrder, workflow.DefaultVersion, 1) == 1 {
		s.nextTicket++
		ticket = s.nextTicket
		s.held = append(s.held, ticket)
		defer s.dropTicket(ticket)
	}
	if ac, ok := c.(core.AppendContext); ok && workflow.GetVersion(ctx, versionUnchangedNoOp, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		ac.AppendUnchanged = true // decided as it was when this history was written
		c = ac
	}
	if err := workflow.Await(ctx, func() bool { return s.drive != nil }); err != nil {
		return SubmitResult{}, err
	}
	if err := s.lockAfterCompaction(ctx, c, ticket); err != nil {
		return SubmitResult{}, err
	}
	defer s.mu.Unlock()
	for attempt := 1; ; attempt++ {
		res, err := s.admitOnce(ctx, c)
		if err == nil || !isAppendConflict(err) || attempt == maxAdmitAttempts ||
			workflow.GetVersion(ctx, versionReadmit, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			return res, err
		}
		// The log moved past the state (a worker died in a workflow task
		// after its appends) and commit rebuilt the state from it: decide
		// again. A run this very command started in the lost task is there
		// now; its id is the client's, so it is answered as a duplicate.
		if sr, ok := c.(core.StartRun); ok {
			if r := s.drive.State().Run(sr.RunID); r != nil && r.InputFingerprint == core.InputFingerprint(sr.Input) {
				return SubmitResult{RunID: r.ID, Status: r.Status, Duplicate: true}, nil
			}
		}
	}
}

// neverAdmitted reports whether a result's admission failed for good: the
// core refused it (runtime.ResultRefused), or the store lacks a blob it
// names. A conflict is not: the state was rebuilt from the log, and the
// work runs again on it; the append activity retries what may pass later
// itself.
func neverAdmitted(err error) bool {
	var appErr *temporal.ApplicationError
	return runtime.ResultRefused(err) || errors.As(err, &appErr) && appErr.Type() == errMissingBlob
}

// versionFailUnadmitted marks workflow code that fails a run whose result
// could not be admitted, where it once dispatched the work again.
const versionFailUnadmitted = "fail-unadmitted-result"

// versionReadmit marks workflow code that decides a command again after its
// append conflicted and the state was rehydrated (it used to fail).
const versionReadmit = "readmit-after-conflict"

// maxAdmitAttempts bounds re-admissions after append conflicts.
const maxAdmitAttempts = 3

// admitOnce refreshes linked material before a run, then admits and
// appends the command. The caller holds s.mu.
func (s *session) admitOnce(ctx workflow.Context, c core.Command) (SubmitResult, error) {
	if _, ok := c.(core.StartRun); ok && workflow.GetVersion(ctx, versionRefresh, workflow.DefaultVersion, 1) == 1 {
		if err := s.refresh(ctx); err != nil {
			return SubmitResult{}, err
		}
	}
	adm, err := runtime.AdmitAndAppend(s.on(ctx), c)
	if err != nil {
		return SubmitResult{}, rejectionError(err)
	}
	s.dirty = true
	return SubmitResult{RunID: adm.RunID, Status: adm.Status, Duplicate: adm.Duplicate, Revision: adm.Revision, EntryIDs: adm.EntryIDs, ConfigPending: adm.ConfigPending}, nil
}

// isAppendConflict reports an append refused because the log had moved on.
func isAppendConflict(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == errAppendConflict
}

// lockAfterCompaction takes s.mu once no standalone compaction is pending:
// runs and context edits wait for it instead of being rejected. Steering
// and cancellation never wait.
func (s *session) lockAfterCompaction(ctx workflow.Context, c core.Command, ticket int64) error {
	for {
		if ticket != 0 {
			// Only the oldest waiting command takes the lock; the others
			// wait behind it, also while a compaction holds it back.
			if err := workflow.Await(ctx, func() bool { return s.held[0] == ticket && !s.mu.IsLocked() }); err != nil {
				return err
			}
		}
		if err := s.mu.Lock(ctx); err != nil {
			return err
		}
		if !runtime.Holdable(c) {
			return nil
		}
		if !runtime.CompactionHolds(s.on(ctx)) {
			return nil
		}
		s.dirty = true // the main loop dispatches it
		s.mu.Unlock()
		if err := workflow.Await(ctx, func() bool { return s.drive.State().Compaction == nil }); err != nil {
			return err
		}
	}
}

// dropTicket takes a command's ticket out of the queue.
func (s *session) dropTicket(ticket int64) {
	s.held = slices.DeleteFunc(s.held, func(t int64) bool { return t == ticket })
}

// versionUnchangedNoOp marks workflow code in which a keyed edit that
// changes nothing appends nothing (core.AppendContext.AppendUnchanged).
const versionUnchangedNoOp = "unchanged-keyed-edit-no-op"

// versionArrivalOrder marks workflow code that admits waiting commands in
// the order they arrived.
const versionArrivalOrder = "admit-in-arrival-order"

// versionCheckpoint marks workflow code that writes reducer checkpoints at
// idle boundaries and every runtime.CheckpointEvery events.
const versionCheckpoint = "reducer-checkpoints"

// versionChainedAppends marks workflow code that appends the core's own
// next steps with the command that caused them (core.Drive.Chain).
const versionChainedAppends = "chained-appends"

// commitChained appends the pending proposals and the steps the core takes
// on its own after them in one Append activity, as runtime/local does. The
// drive has applied them already; if the append fails, or a lost task had
// stored them at other times, the state is rebuilt from the log.
func (s *session) commitChained(ctx workflow.Context) error {
	chained, want, err := s.drive.Chain(nowMs(ctx), runtime.ChainSteps)
	if err == nil {
		var out AppendOut
		err = workflow.ExecuteLocalActivity(appendActivity(ctx), "Append", AppendIn{
			Universe: s.args.Universe, SessionID: s.args.SessionID, ExpectedHead: chained.ExpectedHead, Proposals: chained.Proposals,
		}).Get(ctx, &out)
		if err == nil && len(out.ObservedAtMs) == len(want) {
			for i, at := range out.ObservedAtMs {
				if at != want[i].ObservedAtMs {
					err = errors.New("the chained append was stored by a lost task at other times")
					break
				}
			}
		}
	}
	if err != nil {
		if rerr := s.rehydrate(ctx); rerr != nil {
			return rerr
		}
		return err
	}
	s.drive.Appended()
	s.dirty = true
	s.inflight.CancelStale(s.drive.State())
	return nil
}

// current returns the drive, first rebuilding it from the log if a failed
// chained append left it ahead and its rebuild failed too; a drive still
// ahead admits and plans nothing, and is never checkpointed.
func (s *session) current(ctx workflow.Context) *core.Drive {
	if s.drive.Ahead() {
		if err := s.rehydrate(ctx); err != nil {
			workflow.GetLogger(ctx).Error("rebuilding the state after a failed append failed", "session", s.args.SessionID, "error", err)
		}
	}
	return s.drive
}

// versionIdleCheckpointEvery marks workflow code that checkpoints an idle
// session only once runtime.IdleCheckpointEvery events have passed since
// its last checkpoint, not at every idle boundary.
const versionIdleCheckpointEvery = "idle-checkpoint-every"

// checkpointDue is the checkpoint policy of the code this workflow started
// under.
func (s *session) checkpointDue(ctx workflow.Context) func(*core.State, int64) bool {
	if workflow.GetVersion(ctx, versionIdleCheckpointEvery, workflow.DefaultVersion, 1) == 1 {
		return runtime.CheckpointPolicy{IdleEvery: s.args.IdleCheckpointEvery}.Due
	}
	return runtime.CheckpointDueEveryIdle
}

// checkpoint stores a checkpoint of the state at head through an activity
// (which rebuilds the state from its cache and the log: the state does not
// cross into history). A failure is logged; the next boundary tries again.
func (s *session) checkpoint(ctx workflow.Context, head int64) {
	actCtx := workflow.WithRetryPolicy(s.shortActivity(ctx), temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3})
	err := workflow.ExecuteActivity(actCtx, "Checkpoint", CheckpointIn{Universe: s.args.Universe, SessionID: s.args.SessionID, Head: head}).Get(ctx, nil)
	s.checkpointing = false
	if err != nil {
		workflow.GetLogger(ctx).Warn("checkpoint failed", "session", s.args.SessionID, "head", head, "error", err)
		return
	}
	s.checkpointed = head
	// The session may have gone on to another idle boundary while this one
	// was stored, and the loop skipped it as a checkpoint was in flight:
	// wake the loop to see whether one is due now. Without it an idle
	// session kept that older checkpoint until its next run.
	if workflow.GetVersion(ctx, versionCheckpointRecheck, workflow.DefaultVersion, 1) == 1 {
		s.dirty = true
	}
}

// versionCheckpointRecheck marks workflow code that wakes the loop after a
// checkpoint is stored; histories from before it replay without the wake.
const versionCheckpointRecheck = "checkpoint-recheck"

// versionRefresh marks workflow code that refreshes linked-file material
// before new run work; histories from before it replay without the activity.
const versionRefresh = "refresh-boundary"

// versionRefreshUnsourced marks workflow code that takes the empty result
// of a refresh with nothing to read (runtime.NothingToRefresh) without the
// Refresh activity; histories from before it replay with the activity.
const versionRefreshUnsourced = "refresh-unsourced"

// refresh is runtime.RefreshContext with the links read by the Refresh
// activity. The caller holds s.mu.
func (s *session) refresh(ctx workflow.Context) error {
	// The main loop is woken only when the boundary was reached, as before:
	// waking it more often would change the commands a replay issues.
	derived := false
	err := runtime.RefreshContext(s.on(ctx), func(sum core.Summary) (runtime.Refreshed, error) {
		derived = true
		if runtime.NothingToRefresh(sum.Config) && workflow.GetVersion(ctx, versionRefreshUnsourced, workflow.DefaultVersion, 1) == 1 {
			return runtime.Refreshed{}, nil // a round trip through the server for nothing, every run
		}
		var out RefreshOut
		refreshCtx := workflow.WithRetryPolicy(s.shortActivity(ctx), temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumAttempts: 5})
		err := workflow.ExecuteActivity(refreshCtx, "Refresh", refreshIn(s.args.Universe, sum)).Get(ctx, &out)
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && strings.HasPrefix(appErr.Type(), rejectionPrefix) {
			// A link the universe no longer has: the caller's mistake, typed.
			return runtime.Refreshed{}, temporal.NewNonRetryableApplicationError(appErr.Message(), appErr.Type(), nil)
		}
		return out, err
	})
	if err != nil {
		return rejectionError(err)
	}
	if derived {
		s.dirty = true
	}
	return nil
}

// rejectionError carries a core rejection across Temporal as a typed,
// non-retryable application error.
func rejectionError(err error) error {
	var rej *core.Rejection
	if !errors.As(err, &rej) {
		return err
	}
	return temporal.NewApplicationErrorWithOptions(rej.Message, rejectionPrefix+rej.Kind,
		temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{rej.Expected, rej.Actual}})
}

func (s *session) status() (Status, error) {
	if s.drive == nil {
		return Status{}, errors.New("session state is still loading")
	}
	return statusOf(s.drive.State()), nil
}

// appendActivity runs Append as a local activity: in the worker that runs
// the workflow task, recorded as one marker with its small result and not
// its input. The proposals it carries are thus not copied into history, and
// no extra workflow task is needed per append. A worker that dies mid-append
// fails the workflow task; the next worker re-runs it, and Append finds its
// own events already stored and succeeds.
func appendActivity(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second},
	})
}

// shortActivity is for Rehydrate. They heartbeat too, so an
// append held by a worker that died is retried after the heartbeat timeout,
// not after the whole start-to-close minute (the session would stall that long).
func (s *session) shortActivity(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		HeartbeatTimeout:    s.heartbeatTimeout(),
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	})
}

// providerActivity is for model calls (generation, compaction,
// transcription). The activity itself ends the retries of provider errors
// once the worker's retry budget is spent (Activities.retryProvider), so
// attempts are not counted; a day bounds the retries of anything else (a
// store that stays down), after which the turn fails.
func (s *session) providerActivity(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    10 * time.Minute,
		ScheduleToCloseTimeout: 24 * time.Hour,
		HeartbeatTimeout:       s.heartbeatTimeout(),
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
}

func (s *session) heartbeatTimeout() time.Duration {
	if s.args.HeartbeatTimeoutMs <= 0 {
		return defaultHeartbeatTimeout
	}
	return time.Duration(s.args.HeartbeatTimeoutMs) * time.Millisecond
}

// longActivity is for model and tool calls: heartbeats detect a dead worker
// quickly; attempts are bounded so a broken provider fails the turn.
func (s *session) longActivity(ctx workflow.Context, attempts int32) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    s.heartbeatTimeout(),
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			MaximumAttempts: attempts},
	})
}
