package temporal

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/runtime"
)

// dispatchTranscribe transcribes a run's audio input as an activity that
// receives ids only; when its attempts run out the run fails.
func (s *session) dispatchTranscribe(ctx workflow.Context, w core.TranscribeWork) {
	work := core.Work{RunID: w.RunID, Transcription: true}
	key := work.Key()
	if s.inflight.Get(key) != nil {
		return
	}
	actCtx, cancel := workflow.WithCancel(s.providerActivity(ctx))
	s.inflight.Add(work, cancel)
	in := TranscribeIn{Universe: s.args.Universe, SessionID: s.args.SessionID, Head: s.drive.State().Head, RunID: w.RunID}
	workflow.Go(ctx, func(gctx workflow.Context) {
		var res core.TranscriptionResult
		if err := workflow.ExecuteActivity(actCtx, "Transcribe", in).Get(gctx, &res); err != nil {
			res = failedTranscription(w, err)
		}
		s.deliver(gctx, key, res)
	})
}

// failedTranscription is the result of a transcription whose attempts ran
// out: its run fails.
func failedTranscription(w core.TranscribeWork, err error) core.TranscriptionResult {
	res := runtime.FailedTranscription(w, err)
	if msg, ok := retryableProviderMessage(err); ok {
		res.Failure.Message = msg
	}
	return res
}

// Transcribe transcribes the audio input of a run waiting for its first
// turn and stores the transcripts. Retryable provider errors fail the
// attempt (Temporal retries, after the provider's Retry-After); a terminal
// one completes the activity with a failed result, so the run fails and the
// workflow does not.
func (a *Activities) Transcribe(ctx context.Context, in TranscribeIn) (core.TranscriptionResult, error) {
	st, err := a.store(ctx, in.Universe)
	if err != nil {
		return core.TranscriptionResult{}, err
	}
	var w core.TranscribeWork
	err = a.cache.with(ctx, st, in.Universe, in.SessionID, in.Head, func(s *core.State) error {
		p := s.PendingTranscribeWork(in.RunID)
		if p == nil {
			return fmt.Errorf("run %s has no transcription pending at seq %d", in.RunID, in.Head)
		}
		w = *p
		return nil
	})
	if err != nil {
		return core.TranscriptionResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "stale_work", err)
	}
	stop := heartbeat(ctx)
	defer stop()
	x := &runtime.Executor{Blobs: st, Transcriber: a.Transcriber}
	res, err := x.Transcribe(ctx, w)
	var pe *provider.Error
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil:
		return core.TranscriptionResult{}, ctx.Err()
	case errors.As(err, &pe) && pe.Retryable:
		// The message names the file; provider messages carry no secrets.
		retry, final := a.retryProvider(ctx, pe, err.Error())
		if final != nil {
			return runtime.FailedTranscription(w, final), nil
		}
		return core.TranscriptionResult{}, retry
	case errors.As(err, &pe), errors.Is(err, blob.ErrNotFound),
		errors.Is(err, endpoint.ErrMissingKey), errors.Is(err, endpoint.ErrUnknownProvider), errors.Is(err, endpoint.ErrConfig):
		return runtime.FailedTranscription(w, err), nil
	}
	return core.TranscriptionResult{}, err // a runtime hiccup (store, network to CAS): retried
}
