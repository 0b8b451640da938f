// Package store defines the session log and session catalog every backend
// implements (memory, SQLite, PostgreSQL); storetest is their conformance suite.
package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// SessionLog is the append-only history of every session in one universe.
// In every method a limit <= 0 means no limit, and reading the events of a
// session that has none is ErrSessionNotFound.
type SessionLog interface {
	// Append stores proposals after expectedHead as seqs expectedHead+1…, in one
	// transaction that also updates the lifecycle projection and records every
	// exact ref string in the payloads as a session root. A head mismatch is a
	// *HeadConflictError; a referenced blob that is absent rejects the whole
	// append with a *blob.MissingError. Appending at head 0 creates the session.
	Append(ctx context.Context, sessionID string, expectedHead int64, proposals []core.Proposal) ([]core.Event, error)
	// ReadAfter returns up to limit events with seq > after, in order.
	ReadAfter(ctx context.Context, sessionID string, after int64, limit int) ([]core.Event, error)
	// ReadBefore returns up to limit events with seq < before, in chronological order
	// (the latest ones below before).
	ReadBefore(ctx context.Context, sessionID string, before int64, limit int) ([]core.Event, error)
	// Session returns the lifecycle projection; ErrSessionNotFound if absent.
	Session(ctx context.Context, sessionID string) (core.Lifecycle, error)
	// Sessions lists sessions ordered by id, after the given id, up to limit.
	Sessions(ctx context.Context, afterID string, limit int) ([]core.Lifecycle, error)
	// Unfinished lists the ids of sessions with an active or queued run, by id.
	Unfinished(ctx context.Context) ([]string, error)
}

// ErrSessionNotFound is returned for a session id with no events.
var ErrSessionNotFound = errors.New("session not found")

// ErrHeadConflict is the sentinel inside *HeadConflictError.
var ErrHeadConflict = errors.New("session head conflict")

// HeadConflictError says the log moved since the caller read it.
type HeadConflictError struct {
	SessionID string
	Expected  int64
	Actual    int64
}

func (e *HeadConflictError) Error() string {
	return fmt.Sprintf("session %s: expected head %d, actual %d", e.SessionID, e.Expected, e.Actual)
}
func (e *HeadConflictError) Unwrap() error { return ErrHeadConflict }

// Edges records retention edges: a parent blob whose format embeds refs
// declares them, and each child is then held for as long as the parent is.
// Writers of nested formats (snapshot manifests, assembly reports, skill
// catalogs) call it right after storing the parent; a hash-shaped string in
// arbitrary bytes never becomes an edge by itself.
type Edges interface {
	// PutEdges records parent → child for every child. Parent and children
	// must exist (else *blob.MissingError listing every absent digest, and
	// nothing is written); recording an existing edge again is a no-op.
	EdgeWriter
	// Children lists the recorded children of parent, sorted.
	Children(ctx context.Context, parent content.Digest) ([]content.Digest, error)
}
