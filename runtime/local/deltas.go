package local

import (
	"sync"

	"github.com/cairn-agents/cairn/runtime"
)

// deltaHub passes the pieces of a session's streaming generation to the
// clients watching it. It keeps the pieces of the generation in flight,
// so a client that connects meanwhile sees the answer so far, and forgets
// them once the generation's result is admitted. A watcher too slow to
// take a piece misses it: pieces are for showing, the answer is the event.
type deltaHub struct {
	mu       sync.Mutex
	sessions map[string]*liveGeneration
}

type liveGeneration struct {
	runID    string
	turn     int
	pieces   []runtime.GenerationDelta
	watchers map[chan runtime.GenerationDelta]bool
}

func newDeltaHub() *deltaHub { return &deltaHub{sessions: map[string]*liveGeneration{}} }

func (h *deltaHub) live(sessionID string) *liveGeneration {
	g := h.sessions[sessionID]
	if g == nil {
		g = &liveGeneration{watchers: map[chan runtime.GenerationDelta]bool{}}
		h.sessions[sessionID] = g
	}
	return g
}

// publish records a piece and hands it to the watchers.
func (h *deltaHub) publish(sessionID string, d runtime.GenerationDelta) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.live(sessionID)
	if g.runID != d.RunID || g.turn != d.Turn {
		g.runID, g.turn, g.pieces = d.RunID, d.Turn, nil
	}
	g.pieces = append(g.pieces, d)
	for ch := range g.watchers { // each gets every piece or misses it; the order of sends does not matter
		select {
		case ch <- d:
		default:
		}
	}
}

// end forgets the pieces of a generation whose result is admitted.
func (h *deltaHub) end(sessionID, runID string, turn int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if g := h.sessions[sessionID]; g != nil && g.runID == runID && g.turn == turn {
		g.pieces = nil
		if len(g.watchers) == 0 {
			delete(h.sessions, sessionID)
		}
	}
}

// WatchDeltas returns the pieces of the session's generation in flight so
// far, a channel of the ones that follow, and the function that stops
// the watch.
func (h *Host) WatchDeltas(sessionID string) ([]runtime.GenerationDelta, <-chan runtime.GenerationDelta, func()) {
	hub := h.deltas
	hub.mu.Lock()
	defer hub.mu.Unlock()
	g := hub.live(sessionID)
	ch := make(chan runtime.GenerationDelta, 256)
	g.watchers[ch] = true
	past := append([]runtime.GenerationDelta(nil), g.pieces...)
	return past, ch, func() {
		hub.mu.Lock()
		defer hub.mu.Unlock()
		delete(g.watchers, ch)
		if len(g.watchers) == 0 && len(g.pieces) == 0 && hub.sessions[sessionID] == g {
			delete(hub.sessions, sessionID)
		}
	}
}
