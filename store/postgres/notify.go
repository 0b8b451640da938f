package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// appendsChannel is the NOTIFY channel every append signals at commit, with
// "{universe}/{session}" as the payload.
const appendsChannel = "cairn_appends"

func appendsKey(universe, sessionID string) string { return universe + "/" + sessionID }

// appendHub lets readers wait for a session's next append without polling:
// one connection LISTENs for the whole database while anyone waits, and
// none does otherwise.
type appendHub struct {
	pool *pgxpool.Pool

	mu      sync.Mutex
	waiters map[string]map[*appendWaiter]struct{}
	n       int           // waiters in all sessions
	ready   chan struct{} // closed once the listener's LISTEN is in effect
	stop    context.CancelFunc
	done    chan struct{} // closed when the listener has let go of its connection
}

type appendWaiter struct {
	ch   chan struct{}
	once sync.Once
}

func (w *appendWaiter) wake() { w.once.Do(func() { close(w.ch) }) }

func newAppendHub(pool *pgxpool.Pool) *appendHub {
	return &appendHub{pool: pool, waiters: map[string]map[*appendWaiter]struct{}{}}
}

// WaitAppend returns a channel closed at the session's next committed
// append (by any process writing to this database) or when the listening
// connection fails; a waiter then reads the head again, so a spurious wake
// costs one read. The wait is registered, and LISTEN in effect, when
// WaitAppend returns: read the head after it, never before. It ends, and
// the listener with the last waiter, when ctx is done.
func (s *Store) WaitAppend(ctx context.Context, sessionID string) (<-chan struct{}, error) {
	return s.appends.wait(ctx, appendsKey(s.universe, sessionID))
}

func (h *appendHub) wait(ctx context.Context, key string) (<-chan struct{}, error) {
	w := &appendWaiter{ch: make(chan struct{})}
	h.mu.Lock()
	if h.waiters[key] == nil {
		h.waiters[key] = map[*appendWaiter]struct{}{}
	}
	h.waiters[key][w] = struct{}{}
	h.n++
	if h.stop == nil {
		h.start()
	}
	ready, done := h.ready, h.done
	h.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
		case <-w.ch:
		}
		h.leave(key, w)
	}()
	select {
	case <-ready:
		return w.ch, nil
	case <-done: // the listener failed before LISTEN: the waiter was woken
		return w.ch, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h *appendHub) leave(key string, w *appendWaiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.waiters[key][w]; !ok {
		return
	}
	delete(h.waiters[key], w)
	if len(h.waiters[key]) == 0 {
		delete(h.waiters, key)
	}
	h.n--
	if h.n == 0 && h.stop != nil {
		h.stop()
		h.stop = nil
	}
}

// start runs a listener; the caller holds h.mu.
func (h *appendHub) start() {
	ctx, stop := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan struct{})
	h.stop, h.ready, h.done = stop, ready, done
	go func() {
		defer close(done)
		h.listen(ctx, ready)
		select {
		case <-ready:
		default:
			// It never listened (the database is unreachable): waiters
			// woken now would start the next attempt at once, in a loop.
			select {
			case <-ctx.Done():
			case <-time.After(listenRetryDelay):
			}
		}
		// Whatever ended the listener, its waiters read the head again
		// (a new listener starts with the next waiter).
		h.mu.Lock()
		if h.done == done {
			h.stop = nil
			for _, ws := range h.waiters {
				for w := range ws {
					w.wake()
				}
			}
		}
		h.mu.Unlock()
		stop()
	}()
}

// listenRetryDelay spaces attempts to listen while they fail.
const listenRetryDelay = time.Second

func (h *appendHub) listen(ctx context.Context, ready chan struct{}) {
	_ = listen(ctx, h.pool, appendsChannel, func() { close(ready) }, func(payload string) {
		h.mu.Lock()
		for w := range h.waiters[payload] {
			w.wake()
		}
		h.mu.Unlock()
	})
}

// listen holds a connection LISTENing on channel and calls fn with each
// notification's payload, in order, until ctx ends or the connection
// fails, which it returns; ready is called once LISTEN is in effect.
func listen(ctx context.Context, pool *pgxpool.Pool, channel string, ready func(), fn func(payload string)) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection never goes back to the pool LISTENing.
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if _, err := conn.Exec(cctx, `UNLISTEN *`); err != nil {
			_ = conn.Conn().Close(cctx)
		}
		conn.Release()
	}()
	if _, err := conn.Exec(ctx, `LISTEN `+channel); err != nil {
		return err
	}
	ready()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		fn(n.Payload)
	}
}

// close stops the listener and waits until it has let go of its
// connection: the pool's Close waits for every acquired connection.
func (h *appendHub) close() {
	h.mu.Lock()
	if h.stop != nil {
		h.stop()
		h.stop = nil
	}
	done := h.done
	h.mu.Unlock()
	if done != nil {
		<-done
	}
}

// listening reports whether a listener runs (for tests).
func (h *appendHub) listening() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stop != nil
}
