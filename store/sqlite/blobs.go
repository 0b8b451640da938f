package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/objstore"
)

// Put implements blob.Store. Known bytes are never rewritten, only their
// touched time renewed. A large body is written to its own fresh object key
// before its row exists, so a row always points at a complete body.
func (s *Store) Put(ctx context.Context, data []byte) (content.Digest, error) {
	if len(data) <= InlineMax {
		return s.putInline(ctx, s.writes, data)
	}
	d := content.Sum(data)
	now := s.nowMs()

	// Avoid writing a large body that is already stored.
	res, err := s.writes.ExecContext(ctx, `UPDATE blobs SET touched_at_ms = max(touched_at_ms, ?)
		WHERE universe = ? AND digest = ?`, now, s.universe, d.String())
	if err != nil {
		return content.Digest{}, fmt.Errorf("sqlite: put blob %s: %w", d, err)
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		return d, nil
	}

	key, err := s.objectKey(d)
	if err != nil {
		return content.Digest{}, err
	}
	if err := s.objects.Put(ctx, key, data); err != nil {
		return content.Digest{}, fmt.Errorf("sqlite: put blob %s: %w", d, err)
	}
	if s.testHookBeforeInsert != nil {
		s.testHookBeforeInsert()
	}
	// RETURNING yields the winning row's key: ours, or a racing writer's.
	var stored sql.NullString
	err = s.writes.scanRow(ctx, `INSERT INTO blobs
		(universe, digest, size, object_key, created_at_ms, touched_at_ms) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (universe, digest) DO UPDATE SET touched_at_ms = max(touched_at_ms, excluded.touched_at_ms)
		RETURNING object_key`,
		[]any{s.universe, d.String(), len(data), key, now, now}, &stored)
	if err != nil || stored.String != key {
		// Our object is unreferenced: remove it even if ctx was cancelled.
		if delErr := s.objects.Delete(context.WithoutCancel(ctx), key); delErr != nil && err == nil {
			err = fmt.Errorf("remove duplicate object: %w", delErr)
		}
	}
	if err != nil {
		return content.Digest{}, fmt.Errorf("sqlite: put blob %s: %w", d, err)
	}
	return d, nil
}

// putInline inserts (or touches) a blob of at most InlineMax bytes
// through w: the writer connection, or a transaction on it.
func (s *Store) putInline(ctx context.Context, w interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}, data []byte) (content.Digest, error) {
	d := content.Sum(data)
	now := s.nowMs()
	stored, encoding := compressInline(data)
	if stored == nil {
		stored = []byte{} // nil would bind as NULL, which means "not inline"
	}
	_, err := w.ExecContext(ctx, `INSERT INTO blobs
		(universe, digest, size, inline, encoding, created_at_ms, touched_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (universe, digest) DO UPDATE SET touched_at_ms = max(touched_at_ms, excluded.touched_at_ms)`,
		s.universe, d.String(), len(data), stored, encoding, now, now)
	if err != nil {
		return content.Digest{}, fmt.Errorf("sqlite: put blob %s: %w", d, err)
	}
	return d, nil
}

// objectKey names a fresh object: "<universe>/<2 hex>/<hex>-<upload id>".
// The random upload id means no two uploads share a physical key, so a
// re-upload after retention removed a blob never overwrites a body that a
// slow deleter or reader may still be looking at.
func (s *Store) objectKey(d content.Digest) (string, error) {
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", fmt.Errorf("sqlite: upload id: %w", err)
	}
	h := d.Hex()
	return s.universe + "/" + h[:2] + "/" + h + "-" + hex.EncodeToString(id[:]), nil
}

// Get implements blob.Store; the bytes are re-hashed before they are returned.
// Reading does not renew a blob's touched time.
func (s *Store) Get(ctx context.Context, d content.Digest) ([]byte, error) {
	var size int64
	var inline []byte
	var key, encoding sql.NullString
	err := s.reads.QueryRowContext(ctx, `SELECT size, inline, encoding, object_key FROM blobs WHERE universe = ? AND digest = ?`,
		s.universe, d.String()).Scan(&size, &inline, &encoding, &key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &blob.NotFoundError{Digest: d}
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get blob %s: %w", d, err)
	}
	data, err := decompressInline(d, inline, encoding.String, size)
	if err != nil {
		return nil, err
	}
	if key.Valid {
		data, err = s.objects.Get(ctx, key.String)
		if errors.Is(err, objstore.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s: its body %q is gone from objects/", blob.ErrCorrupt, d, key.String)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite: get blob %s: %w", d, err)
		}
	}
	return blob.Checked(d, data, size)
}

// GetMany implements blob.ManyGetter: the blobs of ds stored inline, in
// one query a page of digests. A body in objects/ is left for Get.
func (s *Store) GetMany(ctx context.Context, ds []content.Digest) (map[content.Digest][]byte, error) {
	out := make(map[content.Digest][]byte, len(ds))
	for page := range slices.Chunk(ds, getManyPage) {
		raw, err := digestsJSON(page)
		if err != nil {
			return nil, err
		}
		if err := s.getInline(ctx, raw, out); err != nil {
			return nil, fmt.Errorf("sqlite: get blobs: %w", err)
		}
	}
	return out, nil
}

// getManyPage bounds one GetMany query: its rows are held until it ends.
const getManyPage = 1000

func (s *Store) getInline(ctx context.Context, digestsJSON string, out map[content.Digest][]byte) error {
	rows, err := s.reads.QueryContext(ctx, `SELECT b.digest, b.size, b.inline, b.encoding FROM blobs AS b
		WHERE b.universe = ? AND b.digest IN (SELECT value FROM json_each(?)) AND b.inline IS NOT NULL`, s.universe, digestsJSON)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var digest string
		var size int64
		var inline []byte
		var encoding sql.NullString
		if err := rows.Scan(&digest, &size, &inline, &encoding); err != nil {
			return err
		}
		d, err := content.ParseDigest(digest)
		if err != nil {
			return err
		}
		data, err := decompressInline(d, inline, encoding.String, size)
		if err == nil {
			data, err = blob.Checked(d, data, size)
		}
		if err != nil {
			return err
		}
		out[d] = data
	}
	return rows.Err()
}

// Missing implements blob.Store.
func (s *Store) Missing(ctx context.Context, ds []content.Digest) ([]content.Digest, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	raw, err := digestsJSON(ds)
	if err != nil {
		return nil, err
	}
	missing, err := missingIn(ctx, s.reads, s.universe, raw)
	if err != nil {
		return nil, fmt.Errorf("sqlite: missing: %w", err)
	}
	return missing, nil
}

// Touch implements blob.Store: one statement renews the held digests, and
// the absent ones are read in the same write transaction, so a concurrent
// collector cannot fall between the two.
func (s *Store) Touch(ctx context.Context, ds []content.Digest) ([]content.Digest, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	raw, err := digestsJSON(ds)
	if err != nil {
		return nil, err
	}
	var missing []content.Digest
	err = s.writeTx(ctx, func(tx stmtTx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE blobs SET touched_at_ms = max(touched_at_ms, ?)
		WHERE universe = ? AND digest IN (SELECT value FROM json_each(?))`, s.nowMs(), s.universe, raw); err != nil {
			return err
		}
		missing, err = missingIn(ctx, tx, s.universe, raw)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: touch: %w", err)
	}
	return missing, nil
}

// missingIn returns the digests of the JSON array digestsJSON that have no
// blobs row, sorted and unique (string order equals byte order for digests).
func missingIn(ctx context.Context, q interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, universe, digestsJSON string) ([]content.Digest, error) {
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT j.value FROM json_each(?) AS j
		WHERE NOT EXISTS (SELECT 1 FROM blobs AS b WHERE b.universe = ? AND b.digest = j.value)
		ORDER BY j.value`, digestsJSON, universe)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var strs []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		strs = append(strs, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(strs) == 0 {
		return nil, nil
	}
	return parseDigests(strs)
}

// Usage implements blob.Store.
func (s *Store) Usage(ctx context.Context) (blob.Usage, error) {
	var u blob.Usage
	err := s.reads.ScanTotals(ctx, `SELECT count(*), coalesce(sum(size), 0) FROM blobs WHERE universe = ?`,
		s.universe).Scan(&u.Blobs, &u.Bytes)
	if err != nil {
		return blob.Usage{}, fmt.Errorf("sqlite: usage: %w", err)
	}
	return u, nil
}
