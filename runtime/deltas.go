package runtime

import "sync"

// GenerationDelta is a piece of a generation's streamed answer, as clients
// see it: never stored, gone once the generation's result is admitted.
type GenerationDelta struct {
	RunID string `json:"runId"`
	Turn  int    `json:"turn"`
	Kind  string `json:"kind"` // text, reasoning or tool_arguments
	Text  string `json:"text"`
	// CallID and Name say whose arguments a tool_arguments piece is.
	CallID string `json:"callId,omitempty"`
	Name   string `json:"name,omitempty"`
}

// Marks the executor sends through OnDelta around each provider attempt,
// with no text. They keep a DeltaHub's pieces to the attempt in flight (a
// retried attempt starts its answer again) and never reach clients.
const (
	DeltaBegin = "begin" // an attempt starts: forget the pieces so far
	DeltaEnd   = "end"   // the attempt is over: its answer is the result now
)

// DeltaHub passes the pieces of sessions' streaming generations to the
// clients watching them. It keeps the pieces of the attempt in flight, so
// a client that connects meanwhile sees the answer so far, and forgets
// them when the attempt ends. A watcher too slow to take a piece misses
// it: pieces are for showing, the answer is the event.
type DeltaHub struct {
	mu       sync.Mutex
	sessions map[string]*liveGeneration
}

type liveGeneration struct {
	runID    string
	turn     int
	pieces   []GenerationDelta
	watchers map[chan GenerationDelta]bool
}

// NewDeltaHub returns an empty hub.
func NewDeltaHub() *DeltaHub { return &DeltaHub{sessions: map[string]*liveGeneration{}} }

func (h *DeltaHub) live(sessionID string) *liveGeneration {
	g := h.sessions[sessionID]
	if g == nil {
		g = &liveGeneration{watchers: map[chan GenerationDelta]bool{}}
		h.sessions[sessionID] = g
	}
	return g
}

// Publish records a piece and hands it to the watchers; a begin or end
// mark only resets what is kept.
func (h *DeltaHub) Publish(sessionID string, d GenerationDelta) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch d.Kind {
	case DeltaBegin:
		g := h.live(sessionID)
		g.runID, g.turn, g.pieces = d.RunID, d.Turn, nil
		return
	case DeltaEnd:
		h.forget(sessionID, d.RunID, d.Turn)
		return
	}
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

// End forgets the pieces of a generation whose result is admitted.
func (h *DeltaHub) End(sessionID, runID string, turn int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.forget(sessionID, runID, turn)
}

func (h *DeltaHub) forget(sessionID, runID string, turn int) {
	if g := h.sessions[sessionID]; g != nil && g.runID == runID && g.turn == turn {
		g.pieces = nil
		if len(g.watchers) == 0 {
			delete(h.sessions, sessionID)
		}
	}
}

// Watch returns the pieces of the session's generation in flight so far,
// a channel of the ones that follow, and the function that stops the
// watch.
func (h *DeltaHub) Watch(sessionID string) ([]GenerationDelta, <-chan GenerationDelta, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.live(sessionID)
	ch := make(chan GenerationDelta, 256)
	g.watchers[ch] = true
	past := append([]GenerationDelta(nil), g.pieces...)
	return past, ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(g.watchers, ch)
		if len(g.watchers) == 0 && len(g.pieces) == 0 && h.sessions[sessionID] == g {
			delete(h.sessions, sessionID)
		}
	}
}
