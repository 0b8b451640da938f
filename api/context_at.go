package api

import (
	"context"
	"errors"

	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// MethodContextDiff lists the context changes between two points.
const MethodContextDiff = "session/context/diff"

// ContextReadParams read the active context now, or as it stood after
// event AtSeq, a page at a time, in request order: the entries after the
// entry After (an entryId: the previous page's cursor; absent: from the
// first), at most Limit of them (0: 100; at most 1000).
type ContextReadParams struct {
	SessionID string `json:"sessionId"`
	AtSeq     *int64 `json:"atSeq,omitempty"`
	After     string `json:"after,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

// ContextDiffParams name two points of a session's log.
type ContextDiffParams struct {
	SessionID string `json:"sessionId"`
	FromSeq   int64  `json:"fromSeq"`
	ToSeq     int64  `json:"toSeq"`
}

// ContextDiffResult lists the entries added, removed and superseded, each
// with the seq of the event that did it, in the order it happened.
type ContextDiffResult = runtime.ContextDiff

func (s call) checkpoints() store.Checkpoints {
	if ch, ok := s.host.(CheckpointHost); ok {
		return ch.Checkpoints()
	}
	return nil
}

// anyCheckpoints is the host's checkpoints, or its store's: a host that
// does not offer its checkpoints (the Temporal gateway) still keeps them
// in its store.
func (s call) anyCheckpoints() store.Checkpoints {
	if cps := s.checkpoints(); cps != nil {
		return cps
	}
	cps, _ := s.host.Log().(store.Checkpoints)
	return cps
}

// readContextAt replays to atSeq from the nearest checkpoint at or below it.
func (s call) readContextAt(ctx context.Context, p ContextReadParams, atSeq int64) (ContextReadResult, error) {
	st, err := runtime.StateAt(ctx, s.host.Log(), s.checkpoints(), s.host.Blobs(), p.SessionID, atSeq)
	if errors.Is(err, runtime.ErrSeqPastHead) {
		return ContextReadResult{}, invalidParams("atSeq must be between 1 and the session's head: " + err.Error())
	}
	if err != nil {
		return ContextReadResult{}, err
	}
	return contextPage(st, p)
}

func (s call) diffContext(ctx context.Context, p ContextDiffParams) (ContextDiffResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return ContextDiffResult{}, err
	}
	d, err := runtime.DiffContext(ctx, s.host.Log(), s.checkpoints(), s.host.Blobs(), p.SessionID, p.FromSeq, p.ToSeq)
	if errors.Is(err, runtime.ErrSeqPastHead) {
		return ContextDiffResult{}, invalidParams("need 0 <= fromSeq <= toSeq <= the session's head: " + err.Error())
	}
	return d, err
}

// ReadContextAt reads the whole context as it stood after event atSeq with
// session/context/read, page after page.
func (c *Client) ReadContextAt(ctx context.Context, sessionID string, atSeq int64) (ContextReadResult, error) {
	return c.readWholeContext(ctx, ContextReadParams{SessionID: sessionID, AtSeq: &atSeq})
}

// DiffContext calls session/context/diff.
func (c *Client) DiffContext(ctx context.Context, p ContextDiffParams) (ContextDiffResult, error) {
	var out ContextDiffResult
	return out, c.Call(ctx, MethodContextDiff, p, &out)
}
