package api

import (
	"context"
	"errors"

	"github.com/cairn-agents/cairn/view"
)

// MethodTranscriptRead pages a session's history for display: raw events
// with a projection of their content (see view.ReadTranscript).
const MethodTranscriptRead = "session/transcript/read"

// TranscriptReadParams select a page. Without before or after it is the
// latest page, read backward from the head it captures. Before is the
// exclusive cursor of an earlier page; after (present, even 0) reads
// forward from that seq, for following live updates from the captured head.
// Before and after exclude each other; limit is 0 (50) to 500.
type TranscriptReadParams struct {
	SessionID string `json:"sessionId"`
	Before    int64  `json:"before,omitempty"`
	After     *int64 `json:"after,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

// TranscriptReadResult is {events, head?, cursor?}: events in chronological
// order, each with its display; head on the latest page and forward reads;
// cursor (before for the next earlier page) until seq 1 has been returned.
type TranscriptReadResult = view.TranscriptPage

func (s call) readTranscript(ctx context.Context, p TranscriptReadParams) (TranscriptReadResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return TranscriptReadResult{}, err
	}
	page, err := view.ReadTranscript(ctx, s.host.Log(), s.host.Blobs(), p.SessionID, view.TranscriptQuery{Before: p.Before, After: p.After, Limit: p.Limit})
	var qe *view.QueryError
	if errors.As(err, &qe) {
		return TranscriptReadResult{}, invalidParams(qe.Msg)
	}
	return page, err
}

// ReadTranscript calls session/transcript/read.
func (c *Client) ReadTranscript(ctx context.Context, p TranscriptReadParams) (TranscriptReadResult, error) {
	var out TranscriptReadResult
	return out, c.Call(ctx, MethodTranscriptRead, p, &out)
}
