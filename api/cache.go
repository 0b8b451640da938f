package api

import (
	"context"
	"errors"

	"github.com/cairn-agents/cairn/view"
)

// MethodCacheReport reports, generation by generation, how much of each
// request repeated the previous one and what broke the prefix when it broke
// (see view.ReadCacheReport).
const MethodCacheReport = "session/cache/report"

// CacheReportParams select a page of generations: the latest, or those
// before the seq Before (the cursor of a later page); limit is 0 (50) to 500
// generations.
type CacheReportParams struct {
	SessionID string `json:"sessionId"`
	Before    int64  `json:"before,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

// CacheReportResult is {turns, cursor?}: one row per generation in
// chronological order, each {runId, turn, seq, model, requestBytes,
// segmentBytes, segments, prefixBytes, prefixSegments, prefixFraction?,
// previousSeq?, previousBytes?, inputTokens?, providerCachedTokens?,
// providerCacheWriteTokens?, brokenBy?: {seq?, kind?, segment: {index,
// kind, ref?, key?}}}; cursor is before for the next earlier page.
type CacheReportResult = view.CacheReport

func (s call) cacheReport(ctx context.Context, p CacheReportParams) (CacheReportResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return CacheReportResult{}, err
	}
	report, err := view.ReadCacheReport(ctx, s.host.Log(), s.host.Blobs(), p.SessionID, view.CacheQuery{Before: p.Before, Limit: p.Limit})
	var qe *view.QueryError
	if errors.As(err, &qe) {
		return CacheReportResult{}, invalidParams(qe.Msg)
	}
	return report, err
}

// CacheReport calls session/cache/report.
func (c *Client) CacheReport(ctx context.Context, p CacheReportParams) (CacheReportResult, error) {
	var out CacheReportResult
	return out, c.Call(ctx, MethodCacheReport, p, &out)
}
