// Package postgres is the hosted store: PostgreSQL (pgx) holds the session
// log, the session catalog, the blob catalog with small bodies inline, and
// the retention holders (session roots, edges); larger blob bodies go to an
// objstore.Store (S3-compatible in production). Everything is scoped by
// universe: a *DB manages universes, API keys and the schema, and hands out
// a *Store bound to exactly one universe.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is a connection pool to one Cairn database. It is safe for concurrent use.
type DB struct {
	pool    *pgxpool.Pool
	now     func() time.Time
	appends *appendHub
}

// Option configures Connect.
type Option func(*options)

type options struct {
	now func() time.Time
}

// WithNow replaces time.Now as the clock for creation and touch times, so
// tests can watch the retention clock move.
func WithNow(now func() time.Time) Option { return func(o *options) { o.now = now } }

// DefaultMaxConns is the pool size unless the URL sets pool_max_conns.
// Appends are bound by commit latency (fsync), so throughput across sessions
// grows with concurrent connections well past the driver's default of four.
const DefaultMaxConns = 16

// ErrInvalidURL is matched by Connect's error for a URL that does not parse.
var ErrInvalidURL = errors.New("invalid PostgreSQL URL")

// Connect opens a pool to the database at connString (a postgres:// URL or
// a keyword/value string; pool settings such as pool_max_conns may ride in
// it) and checks that it answers. It does not look at the schema: servers
// call CheckSchema, `cairn migrate` calls Migrate.
func Connect(ctx context.Context, connString string, opts ...Option) (*DB, error) {
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.now == nil {
		return nil, errors.New("postgres: WithNow(nil)")
	}
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		// Not wrapped: pgconn's error keeps the raw connection string.
		return nil, fmt.Errorf("postgres: %w: %s", ErrInvalidURL, scrub(err, connString))
	}
	if !strings.Contains(connString, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, connectError(ctx, connString, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, connectError(ctx, connString, err)
	}
	return &DB{pool: pool, now: o.now, appends: newAppendHub(pool)}, nil
}

// connectError describes a failed connection without the password. The
// driver's error is flattened to text because it carries the parsed config,
// password included; only context errors stay matchable.
func connectError(ctx context.Context, connString string, err error) error {
	msg := fmt.Sprintf("postgres: connect to %s: %s", redactURL(connString), scrub(err, connString))
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", msg, ctxErr)
	}
	return errors.New(msg)
}

// Close closes every connection of the pool.
func (db *DB) Close() {
	db.appends.close()
	db.pool.Close()
}

// inTx runs fn in one read-committed transaction and commits only if fn succeeds.
func inTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: commit: %w", err)
	}
	return nil
}
