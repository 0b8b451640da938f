package postgres

import (
	"context"
	"errors"
	"strings"
)

// deltasChannel carries what a process wants other processes on the same
// database to hear at once and nobody to keep: the pieces of streaming
// answers, from the worker that reads them to the gateway whose clients
// watch. A NOTIFY reaches whoever LISTENs at that moment and is stored
// nowhere. Its payload is "{universe}\n{session}\n{message}".
const deltasChannel = "cairn_deltas"

// MaxDeltaBytes bounds a message: NOTIFY refuses payloads of 8000 bytes
// and more, and the universe and session ids come first.
const MaxDeltaBytes = 6000

// ErrDeltaTooLarge is a message over MaxDeltaBytes.
var ErrDeltaTooLarge = errors.New("a delta message is larger than MaxDeltaBytes")

// PublishDelta sends message about a session to the processes listening
// on this universe now; nothing is stored.
func (s *Store) PublishDelta(ctx context.Context, sessionID string, message []byte) error {
	if len(message) > MaxDeltaBytes {
		return ErrDeltaTooLarge
	}
	payload := s.universe + "\n" + sessionID + "\n" + string(message)
	_, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, deltasChannel, payload)
	return err
}

// ListenDeltas calls fn with each message published for this universe from
// the moment LISTEN is in effect (ready is then called, when not nil)
// until ctx ends or the connection fails, which it returns. fn runs on the
// listening goroutine, in publication order.
func (s *Store) ListenDeltas(ctx context.Context, ready func(), fn func(sessionID string, message []byte)) error {
	if ready == nil {
		ready = func() {}
	}
	prefix := s.universe + "\n"
	return listen(ctx, s.pool, deltasChannel, ready, func(payload string) {
		rest, ok := strings.CutPrefix(payload, prefix)
		if !ok {
			return // another universe's
		}
		if session, message, ok := strings.Cut(rest, "\n"); ok {
			fn(session, []byte(message))
		}
	})
}
