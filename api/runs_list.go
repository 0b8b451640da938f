package api

import (
	"context"

	"github.com/cairn-agents/cairn/core"
)

// MethodRunsList pages a session's runs, newest first.
const MethodRunsList = "session/runs/list"

// Run list bounds.
const (
	defaultRunList = 50
	maxRunList     = 500
)

// RunsListParams page runs: Before is the exclusive acceptedSeq cursor of
// the previous page (0: from the newest).
type RunsListParams struct {
	SessionID string `json:"sessionId"`
	Before    int64  `json:"before,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

// RunListItem is one run's summary.
type RunListItem struct {
	RunID       string        `json:"runId"`
	Status      string        `json:"status"`
	Turns       int           `json:"turns"`
	AcceptedSeq int64         `json:"acceptedSeq"`
	EndedSeq    int64         `json:"endedSeq,omitempty"`
	Error       *core.Failure `json:"error,omitempty"`
}

// RunsListResult is one page; Cursor, when set, is Before for the next page.
type RunsListResult struct {
	Runs   []RunListItem `json:"runs"`
	Cursor int64         `json:"cursor,omitempty"`
}

func (s call) listRuns(ctx context.Context, p RunsListParams) (RunsListResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return RunsListResult{}, err
	}
	if p.Before < 0 || p.Limit < 0 || p.Limit > maxRunList {
		return RunsListResult{}, invalidParams("before must not be negative and limit must be 0 to 500")
	}
	limit := p.Limit
	if limit == 0 {
		limit = defaultRunList
	}
	out := RunsListResult{Runs: []RunListItem{}}
	err := s.host.Inspect(ctx, p.SessionID, func(st *core.State) {
		runs := st.Runs() // in acceptance order
		for i := len(runs) - 1; i >= 0; i-- {
			r := runs[i]
			if p.Before > 0 && r.AcceptedSeq >= p.Before {
				continue
			}
			if len(out.Runs) == limit {
				out.Cursor = out.Runs[len(out.Runs)-1].AcceptedSeq
				return
			}
			out.Runs = append(out.Runs, RunListItem{RunID: r.ID, Status: r.ShownStatus(), Turns: r.Turns, AcceptedSeq: r.AcceptedSeq, EndedSeq: r.EndedSeq, Error: r.Error})
		}
	})
	return out, err
}

// ListRuns calls session/runs/list.
func (c *Client) ListRuns(ctx context.Context, p RunsListParams) (RunsListResult, error) {
	var out RunsListResult
	return out, c.Call(ctx, MethodRunsList, p, &out)
}
