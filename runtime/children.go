package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
)

// ChildHost is what running a sub-agent needs of a host: both hosts run
// children the same way (RunChildOn), each over its own sessions.
type ChildHost interface {
	Blobs() blob.Store
	NowMs() int64
	NewID(prefix string) string
	// OpenChild opens the child session, recording its parent; a session
	// that exists already is left as it is.
	OpenChild(ctx context.Context, id string, cfg core.SessionConfig, instructions *core.EntryInput, parent core.ParentRef) error
	Submit(ctx context.Context, sessionID string, cmd core.Command) (core.Admission, error)
	// Inspect runs fn on the session's committed state.
	Inspect(ctx context.Context, sessionID string, fn func(*core.State)) error
	// Changed returns a channel closed once the session (probably) moved.
	Changed(ctx context.Context, sessionID string) (<-chan struct{}, error)
	// Stopping reports whether the host is shutting down: a call cut short
	// by that resumes after a restart, so its child is not cancelled.
	Stopping() bool
}

// RunChildOn runs a sub-agent on h: it opens the child session if it does
// not exist, starts its run with the parent call as the submission (a
// call run again after a crash finds the run it started instead of
// starting another), and waits for the run's end. If ctx ends first and
// the host is not stopping, the parent's call was cancelled: so is the
// child's run.
func RunChildOn(ctx context.Context, h ChildHost, c ChildRun) (ChildResult, error) {
	var instr *core.EntryInput
	if c.Instructions != "" {
		item, err := TextInput(ctx, h.Blobs(), c.Instructions)
		if err != nil {
			return ChildResult{}, err
		}
		instr = &core.EntryInput{Kind: core.EntryInstructions, Content: item.Content, TokenEstimate: item.TokenEstimate, Preview: item.Preview}
	}
	if err := h.OpenChild(ctx, c.SessionID, c.Config, instr, c.Parent); err != nil {
		return ChildResult{}, err
	}
	input, err := TextInput(ctx, h.Blobs(), c.Input)
	if err != nil {
		return ChildResult{}, err
	}
	adm, err := h.Submit(ctx, c.SessionID, core.StartRun{AtMs: h.NowMs(), RunID: h.NewID("run_"),
		SubmissionID: "agent_run:" + c.Parent.CallID, Input: []core.InputItem{input}})
	if err != nil {
		return ChildResult{}, err
	}
	res, err := waitChild(ctx, h, c.SessionID, adm.RunID)
	if err != nil && ctx.Err() != nil && !h.Stopping() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, cerr := h.Submit(cctx, c.SessionID, core.CancelRun{AtMs: h.NowMs(), RunID: adm.RunID, Reason: "the parent's call was cancelled"}); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}
	return res, err
}

// waitChild waits until the child's run has ended and returns how.
func waitChild(ctx context.Context, h ChildHost, sessionID, runID string) (ChildResult, error) {
	for {
		changed, err := h.Changed(ctx, sessionID)
		if err != nil {
			return ChildResult{}, err
		}
		var res ChildResult
		ended := false
		if err := h.Inspect(ctx, sessionID, func(s *core.State) {
			if r := s.Run(runID); r != nil && (r.Status == core.StatusCompleted || r.Status == core.StatusFailed || r.Status == core.StatusCancelled) {
				res, ended = ChildResult{SessionID: sessionID, RunID: runID, Status: r.Status, Output: r.Output, Error: r.Error}, true
			}
		}); err != nil {
			return ChildResult{}, err
		}
		if ended {
			return res, nil
		}
		select {
		case <-changed:
		case <-time.After(time.Second): // a change the channel missed
		case <-ctx.Done():
			return ChildResult{}, ctx.Err()
		}
	}
}
