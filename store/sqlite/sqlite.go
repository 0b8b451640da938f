// Package sqlite is the embedded store: one SQLite database (pure Go driver,
// WAL mode) holding the session log, the session catalog, session roots and
// the blob catalog, with blob bodies over 64 KiB kept as files under objects/.
// One *Store implements both store.SessionLog and blob.Store for one universe.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/objstore"
	"github.com/cairn-agents/cairn/store"
)

// InlineMax is the largest blob kept in the database itself; larger bodies
// go to the objects directory.
const InlineMax = 64 << 10

// DefaultUniverse is the universe a Store is bound to unless told otherwise.
const DefaultUniverse = "default"

// busyTimeout is how long a write waits for another process's write lock.
const busyTimeout = 10 * time.Second

// universePattern keeps universe names usable as an object key path segment.
var universePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// ErrInvalidUniverse is matched by Open's error for a malformed universe name.
var ErrInvalidUniverse = errors.New("invalid universe")

// Store is the embedded SQLite store. It is safe for concurrent use.
type Store struct {
	universe string
	now      func() time.Time
	objects  objstore.Store

	// Writes go through a single connection (writes) so writers in this
	// process queue for it instead of spinning on SQLITE_BUSY; its
	// transactions BEGIN IMMEDIATE so a writer in another process cannot
	// interleave between a transaction's read and its write. Reads use a
	// separate pool and, thanks to WAL, never wait for the writer.
	writer *sql.DB
	reader *sql.DB
	writes *writeConn
	// The prepared statements of the reader pool, by SQL text (stmts.go).
	// Run reads through it rather than the pool.
	reads *stmtCache

	// testHookBeforeInsert runs between writing a large blob's object and
	// inserting its row, so tests can lose that race on purpose.
	testHookBeforeInsert func()
}

var (
	_ store.SessionLog = (*Store)(nil)
	_ blob.Store       = (*Store)(nil)
)

// Option configures Open.
type Option func(*options)

type options struct {
	universe string
	now      func() time.Time
}

// WithUniverse binds the Store to a universe (tenant); every row it reads or
// writes carries that universe.
func WithUniverse(universe string) Option { return func(o *options) { o.universe = universe } }

// WithNow replaces time.Now as the clock for blob creation and touch times.
func WithNow(now func() time.Time) Option { return func(o *options) { o.now = now } }

// Open opens (creating if needed) dir/cairn.db and dir/objects/, and brings
// the schema up to date.
func Open(ctx context.Context, dir string, opts ...Option) (*Store, error) {
	o := options{universe: DefaultUniverse, now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if !universePattern.MatchString(o.universe) {
		return nil, fmt.Errorf("sqlite: %w %q", ErrInvalidUniverse, o.universe)
	}
	if o.now == nil {
		return nil, errors.New("sqlite: WithNow(nil)")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("sqlite: create %s: %w", dir, err)
	}
	objects, err := objstore.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	dbPath := filepath.Join(dir, "cairn.db")

	writer, err := sql.Open("sqlite", dsn(dbPath, true))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", dbPath, err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	if err := migrate(ctx, writer, o.now); err != nil {
		writer.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", dbPath, err)
	}

	// Opened after the writer has switched the file to WAL mode.
	reader, err := sql.Open("sqlite", dsn(dbPath, false))
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", dbPath, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	reader.SetMaxOpenConns(n)
	reader.SetMaxIdleConns(n)
	if err := reader.PingContext(ctx); err != nil {
		writer.Close()
		reader.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", dbPath, err)
	}
	writes, err := newWriteConn(ctx, writer)
	if err != nil {
		writer.Close()
		reader.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", dbPath, err)
	}
	return &Store{universe: o.universe, now: o.now, objects: objects, writer: writer, reader: reader,
		writes: writes, reads: newStmtCache(reader)}, nil
}

// dsn builds a file: URI (so any path is escaped correctly) carrying the
// per-connection settings. synchronous=NORMAL is durable across application
// crashes in WAL mode; only an OS crash can lose the last commits.
// temp_store=MEMORY keeps a statement's journal in memory: a statement
// that records a chunk index's edges changes tens of index pages, and
// SQLite spilled the journal of any statement over 64 KiB to a temporary
// file, two system calls a page. The journal holds each page one
// statement changes once, until the statement ends.
func dsn(path string, write bool) string {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	q.Set("_foreign_keys", "1")
	q.Set("_synchronous", "NORMAL")
	q.Add("_pragma", "temp_store(MEMORY)")
	if write {
		q.Set("_journal_mode", "WAL")
		q.Set("_txlock", "immediate")
	} else {
		q.Set("_query_only", "1")
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: q.Encode()}
	return u.String()
}

// Universe returns the universe this Store reads and writes.
func (s *Store) Universe() string { return s.universe }

// Close releases the prepared statements and both connection pools.
func (s *Store) Close() error {
	return errors.Join(s.reads.close(), s.writes.close(), s.reader.Close(), s.writer.Close())
}

func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

// writeTx runs fn in one BEGIN IMMEDIATE transaction on the writer
// connection and commits only if fn succeeds (writeConn.transact).
func (s *Store) writeTx(ctx context.Context, fn func(tx stmtTx) error) error {
	return s.writes.transact(ctx, fn)
}
