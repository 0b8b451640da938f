package local

import (
	"cmp"
	"slices"
	"time"

	"github.com/cairn-agents/cairn/runtime"
)

// Eviction keeps the host's memory bounded over months of sessions: a
// loaded session that nothing depends on is dropped, and loaded again from
// its checkpoint and the log on its next use (runtime.LoadStateReport).
//
// A session is evictable when it is
//   - unheld: no caller is inside Submit, Inspect, InspectLive, Changed or
//     a load of it, and no host goroutine will pump it (refs == 0);
//   - quiet: nothing in flight (no model, tool, compaction or
//     transcription call) and its s.mu is free, so no result is being
//     admitted;
//   - idle: runtime.Idle, no active or queued run and no pending
//     compaction, so nothing would make the host pump it again on its own
//     (a transcription or a refresh belongs to a run or to a Submit).
//
// The policy, applied by each sweep to the evictable sessions in least
// recently used order: keep at most Options.MaxIdleSessions of them, and
// drop those unused for Options.IdleTTL by the host clock. A use is a
// hold's release or a commit, so a session whose run just finished counts
// as fresh. Busy sessions are never counted against the bound nor dropped.
//
// A sweep runs every sweepEvery, and as soon as a load takes the map past
// the bound. Eviction holds s.mu, then h.mu to take the session out of the
// map, and only if it is still unheld and unused since the sweep looked:
// after that no one can reach it (a cancelled call's goroutine may still
// deliver to it, and finds nothing in flight to admit), and the next caller
// loads a fresh copy from the store, which has every event the old copy
// committed.
//
// An idle session normally has a checkpoint at its head already: the host
// writes one at every commit that leaves a session idle. Eviction calls the
// same policy (a no-op then), so a checkpoint whose write failed is retried
// before the session is dropped and its reload stays cheap. A failure is
// only logged: the reload then reads a longer tail, or the whole log.
//
// Long-polling readers wait on the evicted session's changed channel;
// eviction closes it, and they wake and call Changed again, which loads the
// session. The wake is spurious (no new events), which they tolerate.

// Defaults of the eviction policy.
const (
	DefaultMaxIdleSessions = 1024
	DefaultIdleTTL         = 10 * time.Minute
)

// sweeper runs sweeps until the host closes.
func (h *Host) sweeper() {
	defer h.work.Done()
	t := time.NewTicker(h.sweepEvery())
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		case <-h.kick:
		}
		h.sweep()
	}
}

// sweepEvery is the period of the sweeper: often enough for IdleTTL to be
// honoured within a quarter of it, at most once a second.
func (h *Host) sweepEvery() time.Duration {
	every := time.Minute
	if ttl := h.opt.IdleTTL; ttl > 0 {
		every = min(every, max(ttl/4, time.Second))
	}
	return every
}

// candidate is a session as a sweep found it.
type candidate struct {
	s        *session
	used     uint64
	lastUsed time.Time
}

// sweep evicts what the policy says and returns how many sessions it
// evicted.
func (h *Host) sweep() int {
	if h.ctx.Err() != nil {
		return 0
	}
	now := h.opt.Now()
	h.mu.Lock()
	var unheld []candidate
	for _, s := range h.sessions {
		if s.refs == 0 {
			unheld = append(unheld, candidate{s, s.used, s.lastUsed})
		}
	}
	h.mu.Unlock()
	// Least recently used first; uses are unique, so the order is total
	// and owes nothing to the map's.
	slices.SortFunc(unheld, func(a, b candidate) int { return cmp.Compare(a.used, b.used) })
	idle := unheld[:0]
	for _, c := range unheld {
		if c.s.mu.TryLock() {
			if evictable(c.s) {
				idle = append(idle, c)
			}
			c.s.mu.Unlock()
		}
	}
	over := 0 // the least recently used idle sessions beyond the bound
	if h.opt.MaxIdleSessions >= 0 {
		over = len(idle) - h.opt.MaxIdleSessions
	}
	n := 0
	for i, c := range idle {
		expired := h.opt.IdleTTL > 0 && now.Sub(c.lastUsed) >= h.opt.IdleTTL
		if (i < over || expired) && h.evict(c) {
			n++
		}
	}
	if n > 0 {
		h.opt.Logger.Debug("evicted idle sessions", "evicted", n, "loaded", h.loadedCount())
	}
	return n
}

// evictable reports whether a session is quiet and idle. The caller holds
// s.mu.
func evictable(s *session) bool {
	return s.drive != nil && s.inflight.Len() == 0 && runtime.Idle(s.drive.State())
}

// evict drops a session if it is still evictable and unused since the
// sweep looked at it.
func (h *Host) evict(c candidate) bool {
	s := c.s
	if !s.mu.TryLock() {
		return false // busy after all
	}
	defer s.mu.Unlock()
	if !evictable(s) {
		return false
	}
	h.checkpoint(s)
	h.mu.Lock()
	ok := h.sessions[s.id] == s && s.refs == 0 && s.used == c.used
	if ok {
		delete(h.sessions, s.id)
	}
	h.mu.Unlock()
	if ok {
		close(s.changed) // wakes long-polling readers; they call Changed again
	}
	return ok
}

func (h *Host) loadedCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}
