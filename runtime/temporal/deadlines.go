package temporal

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
)

// armDeadlines starts a workflow timer for each client call that waits
// with a timeout and has none yet; when it fires the call expires (an
// answer that came first makes that a stale result). Deadlines are taken
// in call order and the armed set is only looked up, so a replay arms the
// same timers. A run continued as new arms them again from its state.
// The caller holds s.mu.
func (s *session) armDeadlines(ctx workflow.Context) {
	for _, dl := range s.drive.State().ToolDeadlines() {
		if s.armed[dl.CallID] {
			continue
		}
		if s.armed == nil {
			s.armed = map[string]bool{}
		}
		s.armed[dl.CallID] = true
		wait := time.Duration(dl.AtMs-nowMs(ctx)) * time.Millisecond
		id := dl.CallID
		workflow.Go(ctx, func(gctx workflow.Context) {
			if wait > 0 {
				if err := workflow.Sleep(gctx, wait); err != nil {
					return
				}
			}
			if err := s.mu.Lock(gctx); err != nil {
				return
			}
			defer s.mu.Unlock()
			delete(s.armed, id)
			_, err := runtime.AdmitAndAppend(s.on(gctx), core.ExpireToolCall{AtMs: nowMs(gctx), CallID: id})
			if err != nil && !runtime.ResultStale(err) {
				workflow.GetLogger(gctx).Error("expiring a client tool call failed", "session", s.args.SessionID, "call", id, "error", err)
			}
			s.dirty = true // the loop pumps, and arms the deadline again if it was not due
		})
	}
}
