package temporal

import (
	"context"
	"encoding/json"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cairn-agents/cairn/runtime"
)

// The pieces of a streaming answer are read by the worker whose activity
// calls the provider and watched through the gateway the client talks to:
// two processes that share only the database. They travel between them as
// database notifications, never through workflow history: a piece is for
// showing, and the answer arrives as the generation's result like any
// other.

// deltaBus is a store that carries deltas between processes (PostgreSQL
// NOTIFY): what one publishes reaches whoever listens at that moment.
type deltaBus interface {
	PublishDelta(ctx context.Context, sessionID string, message []byte) error
	ListenDeltas(ctx context.Context, ready func(), fn func(sessionID string, message []byte)) error
}

// maxDeltaText bounds the text of one message: JSON may spell a byte in
// six, and a message must stay under the store's bound.
const maxDeltaText = 900

// deltaSender publishes a worker's deltas from one goroutine, so a
// generation never waits on the database for a piece: pieces queue, and
// those that wait together go as one message. A full queue drops pieces
// (the answer is the result, not its pieces).
type deltaSender struct {
	once  sync.Once
	queue chan queuedDelta
}

type queuedDelta struct {
	bus       deltaBus
	sessionID string
	d         runtime.GenerationDelta
}

// sink returns the Executor.OnDelta that publishes on bus.
func (s *deltaSender) sink(bus deltaBus) func(string, runtime.GenerationDelta) {
	s.once.Do(func() {
		s.queue = make(chan queuedDelta, 4096)
		go s.run()
	})
	return func(sessionID string, d runtime.GenerationDelta) {
		select {
		case s.queue <- queuedDelta{bus, sessionID, d}:
		default:
		}
	}
}

func (s *deltaSender) run() {
	for q := range s.queue {
		for {
			// Join the pieces already waiting that continue this one.
			var next *queuedDelta
		join:
			for len(q.d.Text) < maxDeltaText && q.d.Kind != runtime.DeltaBegin && q.d.Kind != runtime.DeltaEnd {
				select {
				case n := <-s.queue:
					if n.bus == q.bus && n.sessionID == q.sessionID && n.d.RunID == q.d.RunID && n.d.Turn == q.d.Turn && n.d.Kind == q.d.Kind {
						q.d.Text += n.d.Text
						continue
					}
					next = &n
					break join
				default:
					break join
				}
			}
			for _, d := range splitDelta(q.d) {
				msg, _ := json.Marshal(d) // a struct of strings and an int always encodes
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_ = q.bus.PublishDelta(ctx, q.sessionID, msg) // a piece that cannot go is dropped
				cancel()
			}
			if next == nil {
				break
			}
			q = *next
		}
	}
}

// splitDelta cuts a piece longer than maxDeltaText on character
// boundaries.
func splitDelta(d runtime.GenerationDelta) []runtime.GenerationDelta {
	var out []runtime.GenerationDelta
	for len(d.Text) > maxDeltaText {
		cut := maxDeltaText
		for cut > 0 && !utf8.RuneStart(d.Text[cut]) {
			cut--
		}
		part := d
		part.Text = d.Text[:cut]
		out = append(out, part)
		d.Text = d.Text[cut:]
	}
	return append(out, d)
}

// deltaListener feeds a gateway's hub from the store's notifications. It
// starts with the first watch and listens for the gateway's life, so a
// client that reconnects finds the pieces of the answer in flight.
type deltaListener struct {
	once sync.Once
	hub  *runtime.DeltaHub
}

// WatchDeltas returns the pieces of the session's generation in flight so
// far, a channel of the ones that follow, and the function that stops
// the watch (api.DeltaHost).
func (g *Gateway) WatchDeltas(sessionID string) ([]runtime.GenerationDelta, <-chan runtime.GenerationDelta, func()) {
	if bus, ok := g.store.(deltaBus); ok {
		g.deltas.once.Do(func() {
			ready := make(chan struct{})
			go g.deltas.listen(bus, ready)
			select { // pieces published before LISTEN is in effect are not heard
			case <-ready:
			case <-time.After(5 * time.Second):
			}
		})
	}
	return g.deltas.hub.Watch(sessionID)
}

func (l *deltaListener) listen(bus deltaBus, ready chan struct{}) {
	var once sync.Once
	for {
		_ = bus.ListenDeltas(context.Background(), func() { once.Do(func() { close(ready) }) }, func(sessionID string, msg []byte) {
			var d runtime.GenerationDelta
			if json.Unmarshal(msg, &d) == nil {
				l.hub.Publish(sessionID, d)
			}
		})
		time.Sleep(time.Second) // the connection failed: listen again
	}
}
