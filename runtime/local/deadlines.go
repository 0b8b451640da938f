package local

import (
	"time"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
)

// armDeadlines arms a timer for each client call that waits with a
// timeout and has none yet (at each pump: after a commit, and when a
// session resumes after a restart). When it fires the call expires; an
// answer that came first makes that a stale result, which changes nothing.
// The caller holds s.mu.
func (h *Host) armDeadlines(s *session) {
	d := h.current(s)
	if d == nil {
		return
	}
	for _, dl := range d.State().ToolDeadlines() {
		if s.armed[dl.CallID] {
			continue
		}
		if s.armed == nil {
			s.armed = map[string]bool{}
		}
		s.armed[dl.CallID] = true
		wait := time.Duration(dl.AtMs-h.nowMs()) * time.Millisecond
		h.later(s, max(wait, 0), func() { h.expire(s, dl.CallID) })
	}
}

// expire admits a client call's expiry. The caller holds s.mu.
func (h *Host) expire(s *session, callID string) {
	delete(s.armed, callID)
	_, err := runtime.AdmitAndAppend(h.on(s), core.ExpireToolCall{AtMs: h.nowMs(), CallID: callID})
	if err != nil && !runtime.ResultStale(err) {
		h.opt.Logger.Error("expiring a client tool call failed", "session", s.id, "call", callID, "err", err)
	}
	h.pump(s) // goes on, or arms the deadline again if it was not due yet
}
