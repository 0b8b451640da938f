package local

import (
	"slices"

	"github.com/cairn-agents/cairn/core"
)

// recentEvents bounds the events a live session keeps of its log's tail:
// a few runs' worth, so that a client long-polling the events of the run
// it started reads them from memory, never from the store.
const recentEvents = 256

// remember keeps events, just committed after the tail the session holds,
// as the new tail (the last recentEvents of both). Readers hold a tail
// without the session's lock, so no item of a tail once published is
// written again: the events go after the tail in its array while it has
// room (tails only move forward in it), else into a fresh array of twice
// the bound, after the tail's last events. A commit then costs its
// events, not a copy of the whole tail. The caller holds s.mu.
func (s *session) remember(events []core.Event) {
	if len(events) == 0 {
		return
	}
	var tail []core.Event
	if old := s.recent.Load(); old != nil && len(*old) > 0 && (*old)[len(*old)-1].Seq+1 == events[0].Seq {
		tail = *old
	}
	events = events[max(0, len(events)-recentEvents):]
	var next []core.Event
	if len(events) <= cap(tail)-len(tail) {
		next = append(tail, events...) // past every tail published
	} else {
		keep := tail[max(0, len(tail)-(recentEvents-len(events))):]
		next = make([]core.Event, 0, 2*recentEvents)
		next = append(append(next, keep...), events...)
	}
	next = next[max(0, len(next)-recentEvents):]
	s.recent.Store(&next)
}

// forget drops the tail: the log may hold other events than the host
// committed (after a failed append, before the drive is rebuilt).
func (s *session) forget() { s.recent.Store(nil) }

// RecentEvents implements api.RecentHost: the events of a live session
// after after (at most limit, if limit > 0) and its head, when the tail
// this host committed holds every one of them up to the head; else false,
// and the reader asks the store. The host is a live session's only
// writer, so its tail ends at the log's head.
func (h *Host) RecentEvents(sessionID string, after int64, limit int) ([]core.Event, int64, bool) {
	h.mu.Lock()
	s := h.sessions[sessionID]
	h.mu.Unlock()
	if s == nil {
		return nil, 0, false
	}
	select {
	case <-s.loaded:
	default:
		return nil, 0, false // still loading or being created
	}
	p := s.recent.Load()
	if p == nil || len(*p) == 0 {
		return nil, 0, false
	}
	tail := *p
	first, head := tail[0].Seq, tail[len(tail)-1].Seq
	if after < first-1 || after > head {
		return nil, 0, false
	}
	out := tail[after-first+1:]
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	// Copies, as the store's reads are: a caller may change what it gets.
	evs := make([]core.Event, len(out))
	for i, ev := range out {
		ev.Payload, ev.Joins = slices.Clone(ev.Payload), slices.Clone(ev.Joins)
		evs[i] = ev
	}
	return evs, head, true
}
