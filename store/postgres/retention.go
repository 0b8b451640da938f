package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

var _ store.Collectable = (*Store)(nil)

// unheld is the holder half of the dead predicate for the blobs row b: no
// session root, checkpoint, snapshot record, workspace head or incoming
// edge names it. The touch half (touched_at < cutoff) goes beside it.
var unheld = unheldWith("")

// heldProbe is unheld for the scan's Held column. There the planner may
// turn each NOT EXISTS into a hashed subplan that reads a whole holder
// table on every page; the OFFSET 0 fence keeps it to index probes per
// scanned row, so a page costs what its rows cost (BENCHMARKS.md).
var heldProbe = unheldWith(" OFFSET 0")

func unheldWith(fence string) string {
	return `NOT EXISTS (SELECT 1 FROM session_roots AS r WHERE r.universe = b.universe AND r.digest = b.digest` + fence + `)
	AND NOT EXISTS (SELECT 1 FROM checkpoints AS c WHERE c.universe = b.universe AND c.digest = b.digest` + fence + `)
	AND NOT EXISTS (SELECT 1 FROM snapshots AS s WHERE s.universe = b.universe AND s.manifest = b.digest` + fence + `)
	AND NOT EXISTS (SELECT 1 FROM workspaces AS w WHERE w.universe = b.universe AND w.head = b.digest` + fence + `)
	AND NOT EXISTS (SELECT 1 FROM retention_edges AS e WHERE e.universe = b.universe AND e.child = b.digest` + fence + `)`
}

// ScanBlobs implements store.Collectable.
func (s *Store) ScanBlobs(ctx context.Context, after store.BlobCursor, cutoff time.Time, limit int) ([]store.CatalogRow, error) {
	q := `SELECT b.digest, b.size, b.touched_at, NOT (` + heldProbe + `)
		FROM blobs AS b
		WHERE b.universe = $1 AND b.touched_at < $2`
	args := []any{s.universe, cutoff}
	if !after.IsZero() {
		q += ` AND (b.touched_at, b.digest) > ($3, $4)`
		args = append(args, after.TouchedAt, after.Digest[:])
	}
	q += ` ORDER BY b.touched_at, b.digest`
	if limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: scan blobs: %w", err)
	}
	var out []store.CatalogRow
	var raw []byte
	var r store.CatalogRow
	_, err = pgx.ForEachRow(rows, []any{&raw, &r.Size, &r.TouchedAt, &r.Held}, func() error {
		d, err := digestFromBytes(raw)
		if err != nil {
			return err
		}
		r.Digest = d
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: scan blobs: %w", err)
	}
	return out, nil
}

// DeleteDeadBlobs implements store.Collectable. The DELETE re-checks the
// whole dead predicate; a holder whose transaction key-share locked the row
// first makes the DELETE wait, and once that holder commits its foreign key
// fails the DELETE (ErrHolderConflict) instead of losing the bytes. Edges
// of deleted parents go with them (ON DELETE CASCADE).
func (s *Store) DeleteDeadBlobs(ctx context.Context, digests []content.Digest, cutoff time.Time) ([]store.DeletedBlob, error) {
	if len(digests) == 0 {
		return nil, nil
	}
	sorted := append([]content.Digest(nil), digests...)
	content.SortDigests(sorted)
	rows, err := s.pool.Query(ctx, `DELETE FROM blobs AS b
		WHERE b.universe = $1 AND b.digest = ANY ($2::bytea[]) AND b.touched_at < $3 AND `+unheld+`
		RETURNING b.digest, b.size, coalesce(b.object_key, '')`, s.universe, digestArgs(sorted), cutoff)
	if err != nil {
		return nil, deleteError(err)
	}
	var out []store.DeletedBlob
	var raw []byte
	var d store.DeletedBlob
	_, err = pgx.ForEachRow(rows, []any{&raw, &d.Size, &d.ObjectKey}, func() error {
		dg, err := digestFromBytes(raw)
		if err != nil {
			return err
		}
		d.Digest = dg
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, deleteError(err)
	}
	return out, nil
}

func deleteError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "23503" || pgErr.Code == "40P01") {
		// foreign_key_violation: a holder committed while we waited for its
		// lock; deadlock_detected: a holder locked rows in another order.
		return fmt.Errorf("postgres: delete dead blobs: %w: %s", store.ErrHolderConflict, pgErr.Message)
	}
	return fmt.Errorf("postgres: delete dead blobs: %w", err)
}

// DeleteObject implements store.Collectable.
func (s *Store) DeleteObject(ctx context.Context, key string) error {
	if s.objects == nil {
		return fmt.Errorf("postgres: delete object %q: %w", key, ErrObjectStorageRequired)
	}
	return s.objects.Delete(ctx, key)
}

func digestFromBytes(b []byte) (content.Digest, error) {
	ds, err := parseDigests([][]byte{b})
	if err != nil {
		return content.Digest{}, err
	}
	return ds[0], nil
}

// LoadBlobCursor implements store.Collectable.
func (s *Store) LoadBlobCursor(ctx context.Context) (store.BlobCursor, error) {
	var c store.BlobCursor
	var raw []byte
	err := s.pool.QueryRow(ctx, `SELECT touched_at, digest FROM retention_cursors WHERE universe = $1`,
		s.universe).Scan(&c.TouchedAt, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.BlobCursor{}, nil
	}
	if err != nil {
		return store.BlobCursor{}, fmt.Errorf("postgres: load blob cursor: %w", err)
	}
	if c.Digest, err = digestFromBytes(raw); err != nil {
		return store.BlobCursor{}, fmt.Errorf("postgres: load blob cursor: %w", err)
	}
	return c, nil
}

// SaveBlobCursor implements store.Collectable.
func (s *Store) SaveBlobCursor(ctx context.Context, c store.BlobCursor) error {
	var err error
	if c.IsZero() {
		_, err = s.pool.Exec(ctx, `DELETE FROM retention_cursors WHERE universe = $1`, s.universe)
	} else {
		_, err = s.pool.Exec(ctx, `INSERT INTO retention_cursors (universe, touched_at, digest) VALUES ($1, $2, $3)
			ON CONFLICT (universe) DO UPDATE SET touched_at = excluded.touched_at, digest = excluded.digest`,
			s.universe, c.TouchedAt, c.Digest[:])
	}
	if err != nil {
		return fmt.Errorf("postgres: save blob cursor: %w", err)
	}
	return nil
}
