package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrSchemaTooNew is returned by Open for a database written by a newer Cairn.
var ErrSchemaTooNew = errors.New("database schema is newer than this binary")

// migration is one schema step. Steps are append-only: never edit a released
// one, add the next version instead.
type migration struct {
	version int
	sql     string
}

// Every data table keys on universe first so hosted multi-tenancy needs no
// schema change. schema_migrations describes the file, not a tenant's data,
// so it has no universe.
var migrations = []migration{
	{version: 1, sql: `
CREATE TABLE sessions (
	universe       TEXT    NOT NULL DEFAULT 'default',
	session_id     TEXT    NOT NULL,
	head           INTEGER NOT NULL,
	status         TEXT    NOT NULL,
	has_unfinished INTEGER NOT NULL, -- core.Lifecycle.Unfinished()
	created_at_ms  INTEGER NOT NULL,
	updated_at_ms  INTEGER NOT NULL,
	lifecycle      TEXT    NOT NULL, -- JSON of core.Lifecycle, the projection itself
	PRIMARY KEY (universe, session_id)
) WITHOUT ROWID;

CREATE INDEX sessions_unfinished ON sessions (universe, session_id) WHERE has_unfinished = 1;

CREATE TABLE events (
	universe       TEXT    NOT NULL DEFAULT 'default',
	session_id     TEXT    NOT NULL,
	seq            INTEGER NOT NULL,
	observed_at_ms INTEGER NOT NULL,
	kind           TEXT    NOT NULL,
	version        INTEGER NOT NULL,
	joins          TEXT,             -- JSON array of strings; NULL when absent
	payload        BLOB    NOT NULL, -- the proposal's bytes, unchanged
	PRIMARY KEY (universe, session_id, seq),
	FOREIGN KEY (universe, session_id) REFERENCES sessions (universe, session_id)
);

CREATE TABLE blobs (
	universe      TEXT    NOT NULL DEFAULT 'default',
	digest        TEXT    NOT NULL, -- "sha256:<hex>"
	size          INTEGER NOT NULL,
	inline        BLOB,             -- the bytes, for blobs of at most 64 KiB
	object_key    TEXT,             -- objects/ key, for larger blobs
	created_at_ms INTEGER NOT NULL,
	touched_at_ms INTEGER NOT NULL, -- last Put; retention's grace clock
	PRIMARY KEY (universe, digest),
	CHECK ((inline IS NULL) <> (object_key IS NULL))
);

CREATE TABLE session_roots (
	universe   TEXT NOT NULL DEFAULT 'default',
	session_id TEXT NOT NULL,
	digest     TEXT NOT NULL,
	PRIMARY KEY (universe, session_id, digest),
	FOREIGN KEY (universe, session_id) REFERENCES sessions (universe, session_id)
) WITHOUT ROWID;

-- Retention asks whether any session roots a digest.
CREATE INDEX session_roots_digest ON session_roots (universe, digest);
`},
	// Retention edges: a parent blob whose format embeds refs holds its
	// children. Deleting a parent row releases its edges (CASCADE); deleting
	// a child that something still points at fails, so a collector cannot
	// remove bytes an edge protects.
	{version: 2, sql: `
CREATE TABLE retention_edges (
	universe TEXT NOT NULL DEFAULT 'default',
	parent   TEXT NOT NULL, -- "sha256:<hex>"
	child    TEXT NOT NULL,
	PRIMARY KEY (universe, parent, child),
	CHECK (parent <> child),
	FOREIGN KEY (universe, parent) REFERENCES blobs (universe, digest) ON DELETE CASCADE,
	FOREIGN KEY (universe, child) REFERENCES blobs (universe, digest)
) WITHOUT ROWID;

-- Retention asks whether any edge points at a digest.
CREATE INDEX retention_edges_child ON retention_edges (universe, child);
`},
	// Workspaces (named, revisioned heads over snapshot manifests) and
	// snapshot records. Both hold their manifest blob: deleting a blob a
	// head or a snapshot references fails.
	{version: 3, sql: `
CREATE TABLE workspaces (
	universe      TEXT    NOT NULL DEFAULT 'default',
	name          TEXT    NOT NULL,
	revision      INTEGER NOT NULL CHECK (revision > 0),
	head          TEXT    NOT NULL, -- "sha256:<hex>" of the snapshot manifest
	created_at_ms INTEGER NOT NULL,
	updated_at_ms INTEGER NOT NULL,
	PRIMARY KEY (universe, name),
	FOREIGN KEY (universe, head) REFERENCES blobs (universe, digest)
) WITHOUT ROWID;

-- Retention asks whether any head points at a digest.
CREATE INDEX workspaces_head ON workspaces (universe, head);

CREATE TABLE snapshots (
	universe      TEXT    NOT NULL DEFAULT 'default',
	manifest      TEXT    NOT NULL, -- "sha256:<hex>"
	created_at_ms INTEGER NOT NULL,
	PRIMARY KEY (universe, manifest),
	FOREIGN KEY (universe, manifest) REFERENCES blobs (universe, digest)
) WITHOUT ROWID;
`},
	// Reducer checkpoints: the state of a session after a seq, as a blob.
	// A checkpoint row holds its blob: deleting a blob a checkpoint
	// references fails.
	{version: 4, sql: `
CREATE TABLE checkpoints (
	universe      TEXT    NOT NULL DEFAULT 'default',
	session_id    TEXT    NOT NULL,
	seq           INTEGER NOT NULL CHECK (seq > 0),
	digest        TEXT    NOT NULL, -- "sha256:<hex>" of the core.EncodeCheckpoint bytes
	created_at_ms INTEGER NOT NULL,
	PRIMARY KEY (universe, session_id, seq),
	FOREIGN KEY (universe, session_id) REFERENCES sessions (universe, session_id),
	FOREIGN KEY (universe, digest) REFERENCES blobs (universe, digest)
) WITHOUT ROWID;

-- Retention asks whether any checkpoint points at a digest.
CREATE INDEX checkpoints_digest ON checkpoints (universe, digest);
`},
	// Lineage and the newest-first listing. A history fork inherits the
	// events 1..fork_at of fork_source, read through it (fork_segments is
	// where its whole inherited prefix is stored, as JSON of
	// []store.Segment); its own events are the ones under its id. A
	// configuration-only clone records only clone_source.
	{version: 5, sql: `
ALTER TABLE sessions ADD COLUMN fork_source   TEXT;
ALTER TABLE sessions ADD COLUMN fork_at       INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN fork_depth    INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN fork_segments TEXT;
ALTER TABLE sessions ADD COLUMN clone_source  TEXT;

-- Deletion asks whether any history fork inherits from a session.
CREATE INDEX sessions_forks ON sessions (universe, fork_source) WHERE fork_source IS NOT NULL;
-- session/list pages newest first.
CREATE INDEX sessions_newest ON sessions (universe, created_at_ms, session_id);
`},
	// Retention scans the catalog of a universe in (touched_at_ms, digest)
	// order, from a cursor, up to the grace cutoff.
	{version: 6, sql: `
CREATE INDEX IF NOT EXISTS blobs_touched ON blobs (universe, touched_at_ms, digest);
`},
	// Where each universe's last bounded collector pass stopped.
	{version: 7, sql: `
CREATE TABLE IF NOT EXISTS retention_cursors (
	universe      TEXT PRIMARY KEY,
	touched_at_ms INTEGER NOT NULL,
	digest        TEXT NOT NULL
) WITHOUT ROWID;
`},
	// An inline body may be stored compressed: encoding names how
	// (compress.go), NULL means the bytes as they are. size stays the
	// length of the bytes themselves.
	{version: 8, sql: `
ALTER TABLE blobs ADD COLUMN encoding TEXT;
`},
	// An event may be stored compressed: encoding names how
	// (event_compress.go), NULL means joins and payload as they are.
	{version: 9, sql: `
ALTER TABLE events ADD COLUMN encoding TEXT;
`},
	// Unfinished() is read once, when a host starts, and scans sessions;
	// the partial index it had was written twice a run, as each run's
	// admission set has_unfinished and its end cleared it.
	{version: 10, sql: `
DROP INDEX IF EXISTS sessions_unfinished;
`},
	// The events of one append may be stored as a group (event_group.go):
	// no column changes, but a binary that predates groups could not read
	// them, so it must refuse the file (ErrSchemaTooNew).
	{version: 11, sql: `SELECT 1;`},
}

// SchemaVersion is the version Open migrates a database to.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// migrate applies every missing migration, each in its own immediate
// transaction that re-checks the version, so two processes opening the same
// new database apply each step once.
func migrate(ctx context.Context, db *sql.DB, now func() time.Time) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version       INTEGER PRIMARY KEY,
		applied_at_ms INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	current, err := appliedVersion(ctx, db)
	if err != nil {
		return err
	}
	if current > SchemaVersion() {
		return fmt.Errorf("%w: database at version %d, binary knows up to %d", ErrSchemaTooNew, current, SchemaVersion())
	}
	for _, m := range migrations {
		if m.version <= current {
			continue
		}
		if err := applyMigration(ctx, db, m, now); err != nil {
			return err
		}
	}
	return nil
}

func appliedVersion(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("migrate: read version: %w", err)
	}
	return v, nil
}

func applyMigration(ctx context.Context, db *sql.DB, m migration, now func() time.Time) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate to %d: %w", m.version, err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	current, err := appliedVersion(ctx, tx)
	if err != nil {
		return err
	}
	if current >= m.version {
		return nil // another process got here first
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("migrate to %d: %w", m.version, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at_ms) VALUES (?, ?)`,
		m.version, now().UnixMilli()); err != nil {
		return fmt.Errorf("migrate to %d: %w", m.version, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate to %d: %w", m.version, err)
	}
	return nil
}
