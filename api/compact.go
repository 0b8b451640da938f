package api

import (
	"context"

	"github.com/cairn-agents/cairn/core"
)

// MethodContextCompact requests standalone compaction of a session's
// conversation now (the manual trigger).
const MethodContextCompact = "session/context/compact"

// ContextCompactResult names the pending compaction. Its end is the
// compaction.completed or compaction.failed event in the session's events.
type ContextCompactResult struct {
	CompactionID string `json:"compactionId"`
	Revision     int64  `json:"revision"` // the context revision it covers
}

// compactContext admits a manual compaction. Like runs, it waits for an
// already pending compaction instead of failing; it is refused while a run
// is active or queued, or when only material that survives compaction is in
// context.
func (s call) compactContext(ctx context.Context, p SessionParams) (ContextCompactResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return ContextCompactResult{}, err
	}
	id := s.host.NewID("cmp_")
	adm, err := s.host.Submit(ctx, p.SessionID, core.RequestCompaction{AtMs: s.host.NowMs(), CompactionID: id})
	if err != nil {
		return ContextCompactResult{}, err
	}
	return ContextCompactResult{CompactionID: id, Revision: adm.Revision}, nil
}

// CompactContext calls session/context/compact.
func (c *Client) CompactContext(ctx context.Context, sessionID string) (ContextCompactResult, error) {
	var out ContextCompactResult
	return out, c.Call(ctx, MethodContextCompact, SessionParams{SessionID: sessionID}, &out)
}
