package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

var _ store.Collectable = (*Store)(nil)

// unheld is the holder half of the dead predicate for the blobs row b: no
// session root, checkpoint, snapshot record, workspace head or incoming
// edge names it. The touch half (touched_at_ms < cutoff) goes beside it.
const unheld = `NOT EXISTS (SELECT 1 FROM session_roots AS r WHERE r.universe = b.universe AND r.digest = b.digest)
	AND NOT EXISTS (SELECT 1 FROM checkpoints AS c WHERE c.universe = b.universe AND c.digest = b.digest)
	AND NOT EXISTS (SELECT 1 FROM snapshots AS s WHERE s.universe = b.universe AND s.manifest = b.digest)
	AND NOT EXISTS (SELECT 1 FROM workspaces AS w WHERE w.universe = b.universe AND w.head = b.digest)
	AND NOT EXISTS (SELECT 1 FROM retention_edges AS e WHERE e.universe = b.universe AND e.child = b.digest)`

// ScanBlobs implements store.Collectable.
func (s *Store) ScanBlobs(ctx context.Context, after store.BlobCursor, cutoff time.Time, limit int) ([]store.CatalogRow, error) {
	afterMs, afterDigest := int64(-1<<63), ""
	if !after.IsZero() {
		afterMs, afterDigest = after.TouchedAt.UnixMilli(), after.Digest.String()
	}
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.reads.QueryContext(ctx, `SELECT b.digest, b.size, b.touched_at_ms, NOT (`+unheld+`)
		FROM blobs AS b
		WHERE b.universe = ? AND b.touched_at_ms < ? AND (b.touched_at_ms, b.digest) > (?, ?)
		ORDER BY b.touched_at_ms, b.digest LIMIT ?`,
		s.universe, cutoff.UnixMilli(), afterMs, afterDigest, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: scan blobs: %w", err)
	}
	defer rows.Close()
	var out []store.CatalogRow
	for rows.Next() {
		var str string
		var r store.CatalogRow
		var ms int64
		if err := rows.Scan(&str, &r.Size, &ms, &r.Held); err != nil {
			return nil, fmt.Errorf("sqlite: scan blobs: %w", err)
		}
		if r.Digest, err = content.ParseDigest(str); err != nil {
			return nil, fmt.Errorf("sqlite: scan blobs: %w", err)
		}
		r.TouchedAt = time.UnixMilli(ms)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: scan blobs: %w", err)
	}
	return out, nil
}

// DeleteDeadBlobs implements store.Collectable: one DELETE re-checks the
// whole dead predicate in the writer's immediate transaction, so no append,
// put or edge interleaves with it, and the edges of deleted parents go in
// the same transaction.
func (s *Store) DeleteDeadBlobs(ctx context.Context, digests []content.Digest, cutoff time.Time) ([]store.DeletedBlob, error) {
	if len(digests) == 0 {
		return nil, nil
	}
	raw, err := digestsJSON(digests)
	if err != nil {
		return nil, err
	}
	var out []store.DeletedBlob
	err = s.writeTx(ctx, func(tx stmtTx) error {
		out = nil
		// SQLite's DELETE takes no table alias: the predicate names blobs.
		rows, err := tx.QueryContext(ctx, `DELETE FROM blobs
			WHERE universe = ? AND digest IN (SELECT value FROM json_each(?))
			AND touched_at_ms < ? AND `+strings.ReplaceAll(unheld, "b.", "blobs.")+`
			RETURNING digest, size, object_key`, s.universe, raw, cutoff.UnixMilli())
		if err != nil {
			return fmt.Errorf("sqlite: delete dead blobs: %w", err)
		}
		var deleted []string
		for rows.Next() {
			var str string
			var key sql.NullString
			var d store.DeletedBlob
			if err := rows.Scan(&str, &d.Size, &key); err != nil {
				rows.Close()
				return fmt.Errorf("sqlite: delete dead blobs: %w", err)
			}
			if d.Digest, err = content.ParseDigest(str); err != nil {
				rows.Close()
				return fmt.Errorf("sqlite: delete dead blobs: %w", err)
			}
			d.ObjectKey = key.String
			deleted = append(deleted, str)
			out = append(out, d)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("sqlite: delete dead blobs: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlite: delete dead blobs: %w", err)
		}
		if len(deleted) == 0 {
			return nil
		}
		parents, err := jsonStrings(deleted)
		if err != nil {
			return err
		}
		// Whether or not foreign keys cascade on this connection.
		if _, err := tx.ExecContext(ctx, `DELETE FROM retention_edges
			WHERE universe = ? AND parent IN (SELECT value FROM json_each(?))`, s.universe, parents); err != nil {
			return fmt.Errorf("sqlite: delete dead blobs: release edges: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteObject implements store.Collectable.
func (s *Store) DeleteObject(ctx context.Context, key string) error {
	return s.objects.Delete(ctx, key)
}

func jsonStrings(strs []string) (string, error) {
	raw, err := json.Marshal(strs)
	if err != nil {
		return "", fmt.Errorf("sqlite: encode digests: %w", err)
	}
	return string(raw), nil
}

// LoadBlobCursor implements store.Collectable.
func (s *Store) LoadBlobCursor(ctx context.Context) (store.BlobCursor, error) {
	var ms int64
	var str string
	err := s.reads.QueryRowContext(ctx, `SELECT touched_at_ms, digest FROM retention_cursors WHERE universe = ?`,
		s.universe).Scan(&ms, &str)
	if errors.Is(err, sql.ErrNoRows) {
		return store.BlobCursor{}, nil
	}
	if err != nil {
		return store.BlobCursor{}, fmt.Errorf("sqlite: load blob cursor: %w", err)
	}
	d, err := content.ParseDigest(str)
	if err != nil {
		return store.BlobCursor{}, fmt.Errorf("sqlite: load blob cursor: %w", err)
	}
	return store.BlobCursor{TouchedAt: time.UnixMilli(ms), Digest: d}, nil
}

// SaveBlobCursor implements store.Collectable.
func (s *Store) SaveBlobCursor(ctx context.Context, c store.BlobCursor) error {
	var err error
	if c.IsZero() {
		_, err = s.writes.ExecContext(ctx, `DELETE FROM retention_cursors WHERE universe = ?`, s.universe)
	} else {
		_, err = s.writes.ExecContext(ctx, `INSERT INTO retention_cursors (universe, touched_at_ms, digest) VALUES (?, ?, ?)
			ON CONFLICT (universe) DO UPDATE SET touched_at_ms = excluded.touched_at_ms, digest = excluded.digest`,
			s.universe, c.TouchedAt.UnixMilli(), c.Digest.String())
	}
	if err != nil {
		return fmt.Errorf("sqlite: save blob cursor: %w", err)
	}
	return nil
}
