package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairn-agents/cairn/content"
)

// Checkpoints stores reducer checkpoints of the sessions of one universe: for
// a session and a seq, the digest of a blob holding a checkpoint of the
// state after that seq (core.EncodeCheckpointParts). The log stays authoritative; a checkpoint only
// saves replaying the events up to its seq, and a reader falls back to a
// full replay when one is unusable. A checkpoint row holds its blob against
// collection, as a workspace head holds its manifest; dropping the row
// releases it. A chunked checkpoint's blob is an index that holds its
// chunks through edges (Edges), which its writer records before the row.
type Checkpoints interface {
	Edges
	// PutCheckpoint records blob as the checkpoint of sessionID at seq. The
	// session must exist (else ErrSessionNotFound) with a head of at least
	// seq, and the blob must exist (else a *blob.MissingError); a rejected
	// put writes nothing. Putting a seq again replaces its blob, so a retry
	// is harmless.
	PutCheckpoint(ctx context.Context, sessionID string, seq int64, blob content.Digest) error
	// LatestCheckpoint returns the checkpoint with the highest seq at or
	// below atOrBelow (of any seq when atOrBelow <= 0);
	// ErrCheckpointNotFound when there is none.
	LatestCheckpoint(ctx context.Context, sessionID string, atOrBelow int64) (seq int64, blob content.Digest, err error)
	// PruneCheckpoints deletes the session's checkpoints with a seq below
	// below, releasing their blobs, and returns how many it deleted.
	PruneCheckpoints(ctx context.Context, sessionID string, below int64) (int, error)
}

var (
	// ErrCheckpointNotFound is returned by LatestCheckpoint when the session
	// has no checkpoint in range.
	ErrCheckpointNotFound = errors.New("checkpoint not found")
	// ErrInvalidCheckpoint is matched by errors for checkpoint requests no
	// backend accepts: an empty session id, a seq below 1 or past the
	// session's head, or a zero blob digest.
	ErrInvalidCheckpoint = errors.New("invalid checkpoint request")
)

// PrepareCheckpoint checks a PutCheckpoint request the same way in every
// backend; the seq against the head is checked by each backend.
func PrepareCheckpoint(sessionID string, seq int64, blob content.Digest) error {
	switch {
	case sessionID == "":
		return fmt.Errorf("%w: empty session id", ErrInvalidCheckpoint)
	case seq < 1:
		return fmt.Errorf("%w: session %s: seq %d", ErrInvalidCheckpoint, sessionID, seq)
	case blob.IsZero():
		return fmt.Errorf("%w: session %s: zero blob digest", ErrInvalidCheckpoint, sessionID)
	}
	return nil
}

// CheckpointPastHead is the error for a checkpoint seq beyond the session's head.
func CheckpointPastHead(sessionID string, seq, head int64) error {
	return fmt.Errorf("%w: session %s: seq %d is past the head %d", ErrInvalidCheckpoint, sessionID, seq, head)
}
