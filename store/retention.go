package store

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/cairn-agents/cairn/content"
)

// Collectable is one universe's blob catalog as the retention collector sees
// it. A blob is dead when it was last touched (put, or admitted by ref)
// before a cutoff and nothing holds it: no session root, no reducer
// checkpoint, no snapshot record, no workspace head and no incoming
// retention edge. Backends evaluate that predicate in the store itself,
// once to report rows and again inside the delete, so a holder or a touch
// that appears after a scan always wins.
type Collectable interface {
	// ScanBlobs returns up to limit catalog rows touched before cutoff and
	// after the cursor, ordered by (TouchedAt, Digest), each marked Held when
	// a holder protects it. A zero cursor starts at the beginning.
	ScanBlobs(ctx context.Context, after BlobCursor, cutoff time.Time, limit int) ([]CatalogRow, error)
	// DeleteDeadBlobs deletes the catalog rows of those digests that are
	// still dead at the time of the delete (touched before cutoff, no
	// holder), in one statement, and returns what it deleted. Deleting a
	// parent also drops its outgoing edges. The rows are committed before it
	// returns; the caller deletes the returned objects afterwards. A holder
	// that raced the delete (a foreign-key failure) is an error matching
	// ErrHolderConflict, and nothing was deleted.
	DeleteDeadBlobs(ctx context.Context, digests []content.Digest, cutoff time.Time) ([]DeletedBlob, error)
	// DeleteObject removes the body of a deleted row (its ObjectKey).
	// Deleting an absent object succeeds.
	DeleteObject(ctx context.Context, key string) error
	// LoadBlobCursor returns where the universe's last bounded pass
	// stopped (zero: start at the beginning). Cursors are durable so a pass
	// resumes after a restart, a one-shot `cairn gc` or a leader handover.
	LoadBlobCursor(ctx context.Context) (BlobCursor, error)
	// SaveBlobCursor records the cursor; a zero cursor starts the next
	// pass over.
	SaveBlobCursor(ctx context.Context, c BlobCursor) error
}

// ErrHolderConflict is matched by DeleteDeadBlobs errors caused by a holder
// recorded concurrently with the delete.
var ErrHolderConflict = errors.New("retention: a holder appeared during the delete")

// BlobCursor is a position in the (TouchedAt, Digest) order of the catalog.
type BlobCursor struct {
	TouchedAt time.Time
	Digest    content.Digest
}

// IsZero reports whether the cursor is the start of the catalog.
func (c BlobCursor) IsZero() bool { return c.TouchedAt.IsZero() && c.Digest.IsZero() }

// Before reports whether c sorts before (t, d).
func (c BlobCursor) Before(t time.Time, d content.Digest) bool {
	if c.IsZero() {
		return true
	}
	if !c.TouchedAt.Equal(t) {
		return c.TouchedAt.Before(t)
	}
	return bytes.Compare(c.Digest[:], d[:]) < 0
}

// CatalogRow is one scanned blob.
type CatalogRow struct {
	Digest    content.Digest
	Size      int64
	TouchedAt time.Time
	Held      bool
}

// DeletedBlob is a catalog row a collector deleted; ObjectKey is empty for
// a body that was stored inline.
type DeletedBlob struct {
	Digest    content.Digest
	Size      int64
	ObjectKey string
}
