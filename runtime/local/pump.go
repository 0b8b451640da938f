package local

import (
	"context"
	"errors"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// pump runs runtime.Pump on the session; a failed append is retried in a
// second. The caller holds s.mu.
func (h *Host) pump(s *session) {
	if h.ctx.Err() != nil {
		return
	}
	if h.current(s) == nil { // ahead of a log it cannot read: it would plan nothing
		h.opt.Logger.Error("reloading a session after a failed append failed; retrying", "session", s.id)
		h.retryPumpLater(s)
		return
	}
	if err := runtime.Pump(h.on(s)); err != nil && h.ctx.Err() == nil {
		h.opt.Logger.Error("appending session events failed; retrying", "session", s.id, "err", err)
		h.retryPumpLater(s)
		return
	}
	h.armDeadlines(s)
}

// sessionHost is a loaded session as runtime's loop sees it. Its user
// holds s.mu.
type sessionHost struct {
	h *Host
	s *session
}

func (h *Host) on(s *session) sessionHost { return sessionHost{h: h, s: s} }

func (x sessionHost) Drive() *core.Drive               { x.h.current(x.s); return x.s.drive }
func (x sessionHost) NowMs() int64                     { return x.h.nowMs() }
func (x sessionHost) Append(in core.Intent) error      { return x.h.commit(x.s, in) }
func (x sessionHost) Generate(w core.GenerateWork)     { x.h.dispatchGenerate(x.s, w) }
func (x sessionHost) Compact(w core.CompactWork)       { x.h.dispatchCompact(x.s, w) }
func (x sessionHost) Transcribe(w core.TranscribeWork) { x.h.dispatchTranscribe(x.s, w) }
func (x sessionHost) InvokeTool(runID string, turn int, call core.ToolCall) {
	x.h.dispatchTool(x.s, runID, turn, call)
}

// retryPumpLater pumps the session again in a second.
// The caller holds s.mu.
func (h *Host) retryPumpLater(s *session) {
	h.later(s, time.Second, func() { h.pump(s) })
}

// dispatchGenerate runs a turn's generation. On a log that appends
// batches, what the answer stores (its blobs, its cache-report list and
// that list's edges) is held and written by the append that admits the
// result: one transaction a turn fewer.
func (h *Host) dispatchGenerate(s *session, w core.GenerateWork) {
	_, hold := h.opt.Log.(store.BatchAppender)
	type held struct {
		res    core.GenerationResult
		writes store.Batch
	}
	launchWith(h, s, core.Work{RunID: w.RunID, Turn: w.Turn}, func(ctx context.Context) (core.GenerationResult, store.Batch, error) {
		r, err := withRetry(h, ctx, s.id, func() (held, error) {
			if !hold {
				res, err := h.opt.Executor.Generate(ctx, s.id, w)
				return held{res: res}, err
			}
			res, writes, err := h.opt.Executor.GenerateHeld(ctx, s.id, w)
			return held{res, writes}, err
		})
		return r.res, r.writes, err
	}, func(err error) core.GenerationResult {
		h.opt.Logger.Warn("generation failed", "session", s.id, "run", w.RunID, "turn", w.Turn, "err", err)
		return runtime.FailedGeneration(w, err)
	})
}

// launch runs one piece of work in the background, once: it records the
// work in flight, runs it, and delivers its result, or failed's result when
// it errs; the result of work cancelled meanwhile is discarded. The caller
// holds s.mu.
func launch[T core.Command](h *Host, s *session, work core.Work, run func(context.Context) (T, error), failed func(error) T) {
	launchWith(h, s, work, func(ctx context.Context) (T, store.Batch, error) {
		res, err := run(ctx)
		return res, store.Batch{}, err
	}, failed)
}

// launchWith is launch for work whose result comes with writes for the
// append that admits it (see dispatchGenerate).
func launchWith[T core.Command](h *Host, s *session, work core.Work, run func(context.Context) (T, store.Batch, error), failed func(error) T) {
	key := work.Key()
	if s.inflight.Get(key) != nil || h.ctx.Err() != nil {
		return // in flight already, or the host is closing
	}
	ctx, cancel := context.WithCancel(h.ctx)
	s.inflight.Add(work, cancel)
	h.work.Add(1)
	go func() {
		defer h.work.Done()
		defer cancel()
		res, writes, err := run(ctx)
		if ctx.Err() != nil {
			return // cancelled: the result is discarded
		}
		if err != nil {
			res, writes = failed(err), store.Batch{}
		}
		h.deliver(s, key, res, writes)
	}()
}

// withRetry makes one provider attempt per try, retrying retryable provider
// errors within the retry budget (runtime.ProviderRetry); the error of the
// last attempt says the budget was spent.
func withRetry[T any](h *Host, ctx context.Context, sessionID string, attempt func() (T, error)) (T, error) {
	policy := h.opt.Retry.provider()
	start := h.opt.Now()
	for n := 1; ; n++ {
		res, err := attempt()
		var pe *provider.Error
		if err == nil || !errors.As(err, &pe) || !pe.Retryable {
			return res, err
		}
		elapsed := h.opt.Now().Sub(start)
		wait, ok := policy.Wait(n, elapsed, pe.RetryAfter)
		if !ok || h.opt.Retry.MaxAttempts > 0 && n >= h.opt.Retry.MaxAttempts {
			return res, runtime.GaveUp(pe, n, elapsed)
		}
		h.opt.Logger.Info("retrying provider call", "session", sessionID, "attempt", n, "wait", wait, "err", err)
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// dispatchCompact runs the pending standalone compaction. A failure the
// host does not retry is admitted as a failed compaction: the original
// entries stay and held commands proceed.
func (h *Host) dispatchCompact(s *session, w core.CompactWork) {
	launch(h, s, core.Work{CompactionID: w.CompactionID}, func(ctx context.Context) (core.CompactionResult, error) {
		return withRetry(h, ctx, s.id, func() (core.CompactionResult, error) { return h.opt.Executor.Compact(ctx, s.id, w) })
	}, func(err error) core.CompactionResult {
		h.opt.Logger.Warn("compaction failed", "session", s.id, "compaction", w.CompactionID, "err", err)
		return runtime.FailedCompaction(w, err)
	})
}

// dispatchTranscribe transcribes a run's audio input before its first turn,
// retrying retryable provider errors; any other failure fails the run.
func (h *Host) dispatchTranscribe(s *session, w core.TranscribeWork) {
	launch(h, s, core.Work{RunID: w.RunID, Transcription: true}, func(ctx context.Context) (core.TranscriptionResult, error) {
		return withRetry(h, ctx, s.id, func() (core.TranscriptionResult, error) { return h.opt.Executor.Transcribe(ctx, w) })
	}, func(err error) core.TranscriptionResult {
		h.opt.Logger.Warn("transcription failed", "session", s.id, "run", w.RunID, "err", err)
		return runtime.FailedTranscription(w, err)
	})
}

// dispatchTool runs one tool call; a failure at the runtime boundary is the
// constant "tool failed" result the model sees.
func (h *Host) dispatchTool(s *session, runID string, turn int, call core.ToolCall) {
	sess := runtime.ToolSessionFor(s.drive.State(), call)
	launch(h, s, core.Work{RunID: runID, Turn: turn, CallID: call.CallID}, func(ctx context.Context) (core.ToolResult, error) {
		return h.opt.Executor.InvokeTool(ctx, sess, runID, turn, call)
	}, func(err error) core.ToolResult {
		h.opt.Logger.Error("tool call failed at the runtime boundary", "session", s.id, "call", call.CallID, "err", err)
		return runtime.FailedToolCall(runID, turn, call)
	})
}

// deliver admits a finished piece of work. A stale result (its run was
// cancelled meanwhile) is dropped. A result the store could not take stays
// in flight, so its work is not run again, and is admitted again after a
// backoff; after runtime.MaxResultAdmissions attempts, or at once when the
// core refuses it, its run fails instead (runtime.Unadmitted), logged once.
func (h *Host) deliver(s *session, key string, cmd core.Command, writes store.Batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h.admitResult(s, key, cmd, writes)
}

// admitResult is deliver with s.mu held. writes are stored by the append
// that admits cmd.
func (h *Host) admitResult(s *session, key string, cmd core.Command, writes store.Batch) {
	f := s.inflight.Get(key)
	if f == nil {
		return // cancelled after it finished
	}
	if g, ok := cmd.(core.GenerationResult); ok {
		defer h.deltas.End(s.id, g.RunID, g.Turn) // its pieces are in the answer now
	}
	_, err := h.admitWith(s, runtime.AtTime(cmd, h.nowMs()), writes)
	var missing *blob.MissingError
	if g, ok := cmd.(core.GenerationResult); ok && g.Cache != nil && len(writes.Edges) > 0 && errors.As(err, &missing) {
		// A blob the cache-report list's edges name went away after the
		// executor checked it: the answer goes in without the list, as
		// when the executor cannot store one.
		g.Cache, writes.Edges = nil, nil
		cmd = g
		_, err = h.admitWith(s, runtime.AtTime(cmd, h.nowMs()), writes)
	}
	switch {
	case err == nil:
	case runtime.ResultStale(err):
		h.opt.Logger.Info("discarding stale result", "session", s.id, "work", key)
	case !runtime.ResultRefused(err) && f.Admissions+1 < runtime.MaxResultAdmissions:
		if f.Admissions == 0 {
			h.opt.Logger.Warn("admitting result failed; retrying", "session", s.id, "work", key, "err", err)
		}
		f.Admissions++
		h.retryLater(s, f.Admissions, func() { h.admitResult(s, key, cmd, writes) })
		return
	default:
		h.opt.Logger.Error("result not admitted; failing its run", "session", s.id, "work", key, "attempts", f.Admissions+1, "err", err)
		h.admitFailure(s, key, runtime.Unadmitted(cmd, err), 1)
		return
	}
	s.inflight.Remove(key)
	h.pump(s)
}

// admitWith admits cmd, storing writes with the append that admits it.
// The caller holds s.mu.
func (h *Host) admitWith(s *session, cmd core.Command, writes store.Batch) (core.Admission, error) {
	if len(writes.Blobs) > 0 || len(writes.Edges) > 0 {
		// The core's own steps first, so the writes ride with the append
		// that admits cmd (a failed flush leaves that step to
		// AdmitAndAppend, which then carries them a step early).
		runtime.Flush(h.on(s))
		s.brought = writes
	}
	adm, err := runtime.AdmitAndAppend(h.on(s), cmd)
	s.brought = store.Batch{}
	return adm, err
}

// admitFailure admits the failure that replaces an unadmittable result. If
// even that cannot be stored, the work stays in flight and it is tried
// again, ever more slowly, never by running the work again.
// The caller holds s.mu.
func (h *Host) admitFailure(s *session, key string, fail core.Command, attempt int) {
	if s.inflight.Get(key) == nil {
		return // cancelled meanwhile
	}
	_, err := runtime.AdmitAndAppend(h.on(s), runtime.AtTime(fail, h.nowMs()))
	var rej *core.Rejection
	if err != nil && !errors.As(err, &rej) {
		h.retryLater(s, attempt, func() { h.admitFailure(s, key, fail, attempt+1) })
		return
	}
	if err != nil {
		h.opt.Logger.Error("failing the run refused", "session", s.id, "work", key, "err", err)
	}
	s.inflight.Remove(key)
	h.pump(s)
}

// retryLater runs fn after an exponential backoff (the provider retry
// policy's delays). The caller holds s.mu.
func (h *Host) retryLater(s *session, attempt int, fn func()) {
	h.later(s, min(h.opt.Retry.BaseDelay<<min(attempt-1, 16), h.opt.Retry.MaxDelay), fn)
}

// later runs fn with s.mu held after wait; the session is held meanwhile,
// so it is not evicted with the step pending. The caller holds s.mu.
func (h *Host) later(s *session, wait time.Duration, fn func()) {
	h.mu.Lock()
	s.refs++
	h.mu.Unlock()
	h.work.Add(1)
	go func() {
		defer h.work.Done()
		defer h.release(s)
		select {
		case <-h.ctx.Done():
		case <-time.After(wait):
			s.mu.Lock()
			fn()
			s.mu.Unlock()
		}
	}()
}
