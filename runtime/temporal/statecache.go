package temporal

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// stateCache keeps each session's reducer state on a worker, so an activity
// that needs the state at a head (to rebuild a planned request) reads only
// the events since its last visit instead of the whole log.
type stateCache struct {
	mu      sync.Mutex
	max     int
	entries map[string]*cachedState
}

type cachedState struct {
	mu    sync.Mutex
	state *core.State
	// last identifies the event at state.Head, to tell whether the log
	// still holds the history the state was built from.
	last [32]byte
}

func newStateCache(max int) *stateCache {
	return &stateCache{max: max, entries: map[string]*cachedState{}}
}

func (c *stateCache) entry(key string) *cachedState {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	if e == nil {
		if len(c.entries) >= c.max {
			for k := range c.entries { // evict any one: the cache only saves reads
				delete(c.entries, k)
				break
			}
		}
		e = &cachedState{}
		c.entries[key] = e
	}
	return e
}

// cacheSource is where a cold cache entry loads from: the session's latest
// checkpoint at or below the head wanted, then the events after it.
type cacheSource interface {
	store.SessionLog
	store.Checkpoints
	blob.Store
}

// with runs fn on the session's state advanced to exactly head. A cold
// entry (a fresh worker, or a head behind the cached one) starts from the
// nearest checkpoint, not from the first event.
func (c *stateCache) with(ctx context.Context, log cacheSource, universe, sessionID string, head int64, fn func(*core.State) error) error {
	e := c.entry(universe + "/" + sessionID)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != nil && e.state.Head > 0 && e.state.Head <= head {
		// A session deleted and created again under its id (on another
		// worker, which cannot tell this one) has other events at the same
		// seqs: the cached state is only good if its last event is still there.
		at, err := eventAt(ctx, log, sessionID, e.state.Head)
		if err != nil || at != e.last {
			e.state = nil
		}
	}
	if e.state == nil || e.state.Head > head {
		e.state = core.NewState()
		if head > 0 {
			st, err := runtime.StateAt(ctx, log, log, log, sessionID, head)
			if err == nil {
				e.last, err = eventAt(ctx, log, sessionID, head)
			}
			if err != nil {
				e.state = nil
				return err
			}
			e.state = st
		}
	}
	for e.state.Head < head {
		evs, err := log.ReadAfter(ctx, sessionID, e.state.Head, int(min(head-e.state.Head, 1000)))
		if err != nil {
			e.state = nil
			return err
		}
		if len(evs) == 0 {
			e.state = nil
			return fmt.Errorf("session %s: log ends at %d, before head %d", sessionID, head, head)
		}
		for _, ev := range evs {
			if err := e.state.Apply(ev); err != nil {
				e.state = nil
				return err
			}
			e.last = eventSum(ev)
		}
	}
	e.state.SessionID = sessionID // a history fork replays its source's session.opened
	return fn(e.state)
}

// eventAt identifies the session's event at seq.
func eventAt(ctx context.Context, log store.SessionLog, sessionID string, seq int64) ([32]byte, error) {
	evs, err := log.ReadAfter(ctx, sessionID, seq-1, 1)
	if err != nil {
		return [32]byte{}, err
	}
	if len(evs) != 1 || evs[0].Seq != seq {
		return [32]byte{}, fmt.Errorf("session %s has no event %d", sessionID, seq)
	}
	return eventSum(evs[0]), nil
}

// eventSum digests everything that makes an event itself.
func eventSum(ev core.Event) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00%d\x00%d\x00%s\x00", ev.Seq, ev.Kind, ev.Version, ev.ObservedAtMs, strings.Join(ev.Joins, ","))
	h.Write(ev.Payload)
	return [32]byte(h.Sum(nil))
}
