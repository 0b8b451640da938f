package local

import (
	"context"
	"errors"
	"time"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

var _ runtime.Children = (*Host)(nil)

// RunChild implements runtime.Children: the child is a session of this
// host, opened with its parent recorded; its run is started with the
// parent call as its submission, so a call run again after a restart
// finds the run it started (and the host resumed) instead of starting
// another. A session runs at most runtime.MaxChildren children at once.
func (h *Host) RunChild(ctx context.Context, c runtime.ChildRun) (runtime.ChildResult, error) {
	if !h.holdChild(c.Parent.SessionID) {
		return runtime.ChildResult{}, &runtime.ChildLimitError{Limit: runtime.MaxChildren}
	}
	defer h.dropChild(c.Parent.SessionID)
	if err := h.openChild(ctx, c); err != nil {
		return runtime.ChildResult{}, err
	}
	input, err := runtime.TextInput(ctx, h.opt.Blobs, c.Input)
	if err != nil {
		return runtime.ChildResult{}, err
	}
	adm, err := h.Submit(ctx, c.SessionID, core.StartRun{AtMs: h.nowMs(), RunID: h.NewID("run_"),
		SubmissionID: "agent_run:" + c.Parent.CallID, Input: []core.InputItem{input}})
	if err != nil {
		return runtime.ChildResult{}, err
	}
	res, err := h.waitRun(ctx, c.SessionID, adm.RunID)
	if err != nil && ctx.Err() != nil {
		// The parent's call was cancelled (its run was, or the host is
		// closing): so is the child's run, unless the host is closing,
		// when it resumes with the parent's call after a restart.
		if h.ctx.Err() == nil {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, cerr := h.Submit(cctx, c.SessionID, core.CancelRun{AtMs: h.nowMs(), RunID: adm.RunID, Reason: "the parent's call was cancelled"}); cerr != nil {
				h.opt.Logger.Warn("cancelling a sub-agent's run failed", "session", c.SessionID, "run", adm.RunID, "err", cerr)
			}
		}
	}
	return res, err
}

// openChild opens the child session unless it exists.
func (h *Host) openChild(ctx context.Context, c runtime.ChildRun) error {
	if _, err := h.opt.Log.Session(ctx, c.SessionID); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrSessionNotFound) {
		return err
	}
	var instr *core.EntryInput
	if c.Instructions != "" {
		item, err := runtime.TextInput(ctx, h.opt.Blobs, c.Instructions)
		if err != nil {
			return err
		}
		instr = &core.EntryInput{Kind: core.EntryInstructions, Content: item.Content, TokenEstimate: item.TokenEstimate, Preview: item.Preview}
	}
	parent := c.Parent
	_, err := h.createSession(ctx, c.SessionID, c.Config, instr, &parent)
	var rej *core.Rejection
	if errors.As(err, &rej) && rej.Kind == core.RejectSessionExists {
		return nil // opened meanwhile
	}
	return err
}

// waitRun waits until the run has ended and returns how.
func (h *Host) waitRun(ctx context.Context, sessionID, runID string) (runtime.ChildResult, error) {
	for {
		s, err := h.session(ctx, sessionID)
		if err != nil {
			return runtime.ChildResult{}, err
		}
		s.mu.Lock()
		res, ended := runtime.ChildResult{}, false
		if d := h.current(s); d != nil {
			if r := d.State().Run(runID); r != nil && (r.Status == core.StatusCompleted || r.Status == core.StatusFailed || r.Status == core.StatusCancelled) {
				res, ended = runtime.ChildResult{SessionID: sessionID, RunID: runID, Status: r.Status, Output: r.Output, Error: r.Error}, true
			}
		}
		changed := s.changed
		s.mu.Unlock()
		h.release(s)
		if ended {
			return res, nil
		}
		select {
		case <-changed:
		case <-time.After(time.Second): // the session may have been evicted and loaded again
		case <-ctx.Done():
			return runtime.ChildResult{}, ctx.Err()
		}
	}
}

// holdChild counts a running child of parent, if it has room for one.
func (h *Host) holdChild(parent string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.children[parent] >= runtime.MaxChildren {
		return false
	}
	h.children[parent]++
	return true
}

func (h *Host) dropChild(parent string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.children[parent]--; h.children[parent] <= 0 {
		delete(h.children, parent)
	}
}
