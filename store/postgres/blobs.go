package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/objstore"
)

// InlineMax is the largest blob kept in PostgreSQL itself; larger bodies go
// to object storage.
const InlineMax = 64 << 10

// ErrObjectStorageRequired is matched by the error for writing (or reading)
// a blob over InlineMax on a Store without object storage.
var ErrObjectStorageRequired = errors.New("object storage is required for blobs over 64 KiB (configure S3)")

// touchFirstMin is the size above which Put looks for the blob before
// sending its bytes. Smaller blobs go in one insert-or-touch statement: a
// second round trip would cost more than resending them.
const touchFirstMin = 8 << 10

// cleanupTimeout bounds the work Put does after its caller's context ended.
const cleanupTimeout = 10 * time.Second

// Put implements blob.Store as touch-or-insert: bytes already in the
// universe are never rewritten or re-uploaded, only their touched time moves
// forward. A large body is uploaded to a fresh object key before its row is
// inserted, so a row always points at a complete object.
func (s *Store) Put(ctx context.Context, data []byte) (content.Digest, error) {
	d := content.Sum(data)
	if len(data) > InlineMax && s.objects == nil {
		// Refused even when the bytes are already stored, so whether a write
		// works does not depend on what other servers wrote before.
		return content.Digest{}, fmt.Errorf("postgres: put blob %s of %d bytes: %w", d, len(data), ErrObjectStorageRequired)
	}
	now := s.now()
	if len(data) > touchFirstMin {
		// Known bytes of this size cost a short UPDATE rather than sending
		// them again (to PostgreSQL or, above InlineMax, to object storage).
		touched, err := s.touch(ctx, d, now)
		if err != nil {
			return content.Digest{}, err
		}
		if touched {
			return d, nil
		}
	}
	if len(data) <= InlineMax {
		return d, s.putInline(ctx, s.pool, d, data, now)
	}

	key, err := s.objectKey(d)
	if err != nil {
		return content.Digest{}, err
	}
	if err := s.objects.Put(ctx, key, data); err != nil {
		return content.Digest{}, fmt.Errorf("postgres: put blob %s: upload: %w", d, err)
	}
	if s.testHookBeforeInsert != nil {
		s.testHookBeforeInsert()
	}
	// RETURNING yields the winning row's key: ours, or that of a writer who
	// inserted the same bytes since our touch found nothing.
	var stored string
	err = s.pool.QueryRow(ctx, `INSERT INTO blobs (universe, digest, size, object_key, created_at, touched_at)
		VALUES ($1, $2, $3, $4, $5, $5)
		ON CONFLICT (universe, digest) DO UPDATE SET touched_at = GREATEST(blobs.touched_at, excluded.touched_at)
		RETURNING object_key`, s.universe, d[:], len(data), key, now).Scan(&stored)
	if err != nil {
		s.dropIfUnused(ctx, d, key)
		return content.Digest{}, fmt.Errorf("postgres: put blob %s: %w", d, err)
	}
	if stored != key {
		// We lost the race: exactly one row, and our object is nobody's.
		if err := s.deleteObject(ctx, key); err != nil {
			return content.Digest{}, fmt.Errorf("postgres: put blob %s: remove duplicate upload: %w", d, err)
		}
	}
	return d, nil
}

// putInline inserts (or touches) a blob of at most InlineMax bytes in one
// insert-or-touch statement, through the pool or a transaction; an
// existing row keeps its bytes.
func (s *Store) putInline(ctx context.Context, db interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}, d content.Digest, data []byte, now time.Time) error {
	if data == nil {
		data = []byte{} // nil would bind as NULL, which means "not inline"
	}
	if _, err := db.Exec(ctx, putInlineSQL, s.universe, d[:], len(data), data, now); err != nil {
		return fmt.Errorf("postgres: put blob %s: %w", d, err)
	}
	return nil
}

// putInlineSQL stores an inline blob, or renews the one stored.
const putInlineSQL = `INSERT INTO blobs (universe, digest, size, inline, created_at, touched_at)
	VALUES ($1, $2, $3, $4, $5, $5)
	ON CONFLICT (universe, digest) DO UPDATE SET touched_at = GREATEST(blobs.touched_at, excluded.touched_at)`

// touch moves an existing blob's touched_at forward and reports whether the
// blob exists.
func (s *Store) touch(ctx context.Context, d content.Digest, now time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE blobs SET touched_at = GREATEST(touched_at, $3)
		WHERE universe = $1 AND digest = $2`, s.universe, d[:], now)
	if err != nil {
		return false, fmt.Errorf("postgres: put blob %s: %w", d, err)
	}
	return tag.RowsAffected() > 0, nil
}

// dropIfUnused deletes our uploaded object after a failed insert, but only
// once the catalog shows the row is not ours: an error can arrive after the
// insert committed (a lost connection), and deleting then would leave a row
// without its body. When in doubt the object stays, an orphan at worst.
func (s *Store) dropIfUnused(ctx context.Context, d content.Digest, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var stored string
	err := s.pool.QueryRow(ctx, `SELECT object_key FROM blobs WHERE universe = $1 AND digest = $2`,
		s.universe, d[:]).Scan(&stored)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && stored != key) {
		_ = s.objects.Delete(ctx, key) // best effort; the error being reported is the insert's
	}
}

// deleteObject removes an object even if the caller's context has ended.
func (s *Store) deleteObject(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	return s.objects.Delete(ctx, key)
}

// objectKey names a fresh upload: "<universe>/<2 hex>/<64 hex>/<upload id>".
// The universe keeps tenants apart in a shared bucket, the two-hex level
// spreads keys, and the random upload id makes every upload's key unique, so
// a delayed delete of an old upload can never remove a newer one.
func (s *Store) objectKey(d content.Digest) (string, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", fmt.Errorf("postgres: upload id: %w", err)
	}
	h := d.Hex()
	return s.universe + "/" + h[:2] + "/" + h + "/" + hex.EncodeToString(id[:]), nil
}

// Get implements blob.Store. The bytes are re-hashed before they are
// returned; reading never moves touched_at.
func (s *Store) Get(ctx context.Context, d content.Digest) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		var size int64
		var inline []byte
		var key *string
		err := s.pool.QueryRow(ctx, `SELECT size, inline, object_key FROM blobs WHERE universe = $1 AND digest = $2`,
			s.universe, d[:]).Scan(&size, &inline, &key)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, &blob.NotFoundError{Digest: d}
		}
		if err != nil {
			return nil, fmt.Errorf("postgres: get blob %s: %w", d, err)
		}
		data := inline
		if key != nil {
			if s.objects == nil {
				return nil, fmt.Errorf("postgres: get blob %s of %d bytes: %w", d, size, ErrObjectStorageRequired)
			}
			data, err = s.objects.Get(ctx, *key)
			if errors.Is(err, objstore.ErrNotFound) {
				if attempt == 0 {
					// A collector may have deleted the row and then the object
					// between our two reads: look again before calling it corrupt.
					continue
				}
				return nil, fmt.Errorf("%w: %s: its object %q is gone", blob.ErrCorrupt, d, *key)
			}
			if err != nil {
				return nil, fmt.Errorf("postgres: get blob %s: %w", d, err)
			}
		}
		return blob.Checked(d, data, size)
	}
}

// GetMany implements blob.ManyGetter: the blobs of ds stored inline, in
// one query a page of digests. A body in object storage is left for Get.
func (s *Store) GetMany(ctx context.Context, ds []content.Digest) (map[content.Digest][]byte, error) {
	out := make(map[content.Digest][]byte, len(ds))
	for page := range slices.Chunk(ds, getManyPage) {
		rows, err := s.pool.Query(ctx, `SELECT digest, size, inline FROM blobs
			WHERE universe = $1 AND digest = ANY($2) AND inline IS NOT NULL`, s.universe, digestArgs(page))
		if err != nil {
			return nil, fmt.Errorf("postgres: get blobs: %w", err)
		}
		var raw, inline []byte
		var size int64
		_, err = pgx.ForEachRow(rows, []any{&raw, &size, &inline}, func() error {
			ds, err := parseDigests([][]byte{raw})
			if err != nil {
				return err
			}
			data, err := blob.Checked(ds[0], inline, size) // pgx scans each row's bytea into a new slice
			if err != nil {
				return err
			}
			out[ds[0]] = data
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("postgres: get blobs: %w", err)
		}
	}
	return out, nil
}

// getManyPage bounds one GetMany query: its rows are held until it ends.
const getManyPage = 1000

// Missing implements blob.Store.
func (s *Store) Missing(ctx context.Context, ds []content.Digest) ([]content.Digest, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	want := slices.Clone(ds)
	content.SortDigests(want)
	want = slices.Compact(want)
	rows, err := s.pool.Query(ctx, `SELECT digest FROM blobs WHERE universe = $1 AND digest = ANY ($2::bytea[])`,
		s.universe, digestArgs(want))
	if err != nil {
		return nil, fmt.Errorf("postgres: missing: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("postgres: missing: %w", err)
	}
	return absent(want, found), nil
}

// Touch implements blob.Store in one statement: the rows it renews are the
// digests held, and the rest are absent.
func (s *Store) Touch(ctx context.Context, ds []content.Digest) ([]content.Digest, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	want := slices.Clone(ds)
	content.SortDigests(want)
	want = slices.Compact(want)
	rows, err := s.pool.Query(ctx, `UPDATE blobs SET touched_at = GREATEST(touched_at, $3)
		WHERE universe = $1 AND digest = ANY ($2::bytea[]) RETURNING digest`,
		s.universe, digestArgs(want), s.now())
	if err != nil {
		return nil, fmt.Errorf("postgres: touch: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("postgres: touch: %w", err)
	}
	return absent(want, found), nil
}

// Usage implements blob.Store.
func (s *Store) Usage(ctx context.Context) (blob.Usage, error) {
	var u blob.Usage
	err := s.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(size), 0)::bigint FROM blobs WHERE universe = $1`,
		s.universe).Scan(&u.Blobs, &u.Bytes)
	if err != nil {
		return blob.Usage{}, fmt.Errorf("postgres: usage: %w", err)
	}
	return u, nil
}
