package api

import (
	"context"
	"encoding/json"

	"github.com/cairn-agents/cairn/core"
)

// MethodRunsRetry goes on with a failed run from where it stopped.
const MethodRunsRetry = "session/runs/retry"

func runRetryRoutes() map[string]method {
	return map[string]method{
		MethodRunsRetry: handler(call.retryRun).session("unknown_reference", core.RejectRunNotRetryable, "session_closed", "compaction_pending", KindMissingBlob, core.RejectContextWindowExceeded),
	}
}

// retryRun starts a run that goes on from where the failed run stopped
// (core.StartRun.RetryOf), with the skills that run activated: they left
// context when it failed. Retrying twice answers the same run.
func (s call) retryRun(ctx context.Context, p RunParams) (RunStartResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return RunStartResult{}, err
	}
	if p.RunID == "" {
		return RunStartResult{}, invalidParams("runId is required")
	}
	activations, err := s.failedRunActivations(ctx, p.SessionID, p.RunID)
	if err != nil {
		return RunStartResult{}, err
	}
	window, err := s.contextWindow(ctx, p.SessionID)
	if err != nil {
		return RunStartResult{}, err
	}
	adm, err := s.host.Submit(ctx, p.SessionID, core.StartRun{AtMs: s.host.NowMs(), RunID: s.host.NewID("run_"), RetryOf: p.RunID, Activations: activations, ContextWindow: window})
	if err != nil {
		return RunStartResult{}, err
	}
	return RunStartResult{RunID: adm.RunID, Status: adm.Status}, nil
}

// failedRunActivations reads the skill activations a run was accepted with
// from its run.accepted event (the state drops them when a run ends). An
// unknown run has none; the core then refuses the retry by name.
func (s call) failedRunActivations(ctx context.Context, sessionID, runID string) ([]core.EntryInput, error) {
	var seq int64
	err := s.host.Inspect(ctx, sessionID, func(st *core.State) {
		if r := st.Run(runID); r != nil {
			seq = r.AcceptedSeq
		}
	})
	if err != nil || seq == 0 {
		return nil, err
	}
	evs, _, err := s.eventsAfter(ctx, sessionID, seq-1, 1)
	if err != nil {
		return nil, err
	}
	if len(evs) != 1 || evs[0].Kind != core.KindRunAccepted {
		return nil, nil
	}
	var accepted core.RunAccepted
	if err := json.Unmarshal(evs[0].Payload, &accepted); err != nil {
		return nil, err
	}
	return accepted.Activations, nil
}
