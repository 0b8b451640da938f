package postgres

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Migration is one embedded schema step. Steps are append-only: a released
// file is never edited (CheckSchema would refuse every database it ran on),
// the next number is added instead.
type Migration struct {
	Version  int
	Name     string // file name, e.g. "0001_init.sql"
	Checksum string // hex SHA-256 of the file
	sql      string
}

// Schema errors, returned by CheckSchema (and Migrate, for the last two).
var (
	// ErrSchemaNotMigrated: the database has no Cairn schema or lacks steps
	// this binary has.
	ErrSchemaNotMigrated = errors.New("database schema is not migrated: run `cairn migrate`")
	// ErrSchemaTooNew: the database has steps this binary does not know.
	ErrSchemaTooNew = errors.New("database schema is newer than this binary")
	// ErrSchemaChecksum: a recorded step differs from the embedded file.
	ErrSchemaChecksum = errors.New("database schema does not match this binary's migrations")
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationName is "<version>_<words>.sql".
var migrationName = regexp.MustCompile(`^([0-9]+)_[a-z0-9_]+\.sql$`)

// Migrations returns the embedded steps in version order.
func Migrations() []Migration {
	out := slices.Clone(embedded())
	for i := range out {
		out[i].sql = ""
	}
	return out
}

var embedded = sync.OnceValue(func() []Migration {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is compiled in
	}
	var out []Migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			panic("postgres: badly named migration " + e.Name())
		}
		v, err := strconv.Atoi(m[1])
		if err != nil {
			panic(err)
		}
		raw, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(raw)
		out = append(out, Migration{Version: v, Name: e.Name(), Checksum: hex.EncodeToString(sum[:]), sql: string(raw)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range out {
		if m.Version != i+1 {
			panic(fmt.Sprintf("postgres: migration %s: versions must run 1, 2, 3… without gaps", m.Name))
		}
	}
	return out
})

// migrateLockKey is the advisory lock migrators take ("cairn" in ASCII), so
// two `cairn migrate` runs at once apply each step exactly once.
const migrateLockKey int64 = 0x636169726e

// Migrate applies every embedded step the database lacks, all in one
// transaction under an advisory lock, and returns the steps it applied (none
// when the schema is current). It refuses a database whose recorded steps
// this binary does not know or whose checksums differ.
func (db *DB) Migrate(ctx context.Context) ([]Migration, error) {
	var applied []Migration
	err := inTx(ctx, db.pool, func(tx pgx.Tx) error {
		// Held until commit; a second migrator waits here, then finds
		// everything applied.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey); err != nil {
			return fmt.Errorf("postgres: migrate: lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			checksum   text NOT NULL,
			applied_at timestamptz NOT NULL
		)`); err != nil {
			return fmt.Errorf("postgres: migrate: %w", err)
		}
		recorded, err := recordedMigrations(ctx, tx)
		if err != nil {
			return err
		}
		missing, err := compareSchema(recorded)
		if err != nil {
			return err
		}
		for _, m := range missing {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("postgres: migrate: %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, checksum, applied_at)
				VALUES ($1, $2, $3, $4)`, m.Version, m.Name, m.Checksum, db.now()); err != nil {
				return fmt.Errorf("postgres: migrate: record %s: %w", m.Name, err)
			}
			m.sql = ""
			applied = append(applied, m)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}

// CheckSchema reports whether the database holds exactly the schema this
// binary was built for. Servers call it at start and refuse to run otherwise;
// it changes nothing.
func (db *DB) CheckSchema(ctx context.Context) error {
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return fmt.Errorf("postgres: check schema: %w", err)
	}
	if !exists {
		return fmt.Errorf("postgres: %w (no schema_migrations table)", ErrSchemaNotMigrated)
	}
	recorded, err := recordedMigrations(ctx, db.pool)
	if err != nil {
		return err
	}
	missing, err := compareSchema(recorded)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		names := make([]string, len(missing))
		for i, m := range missing {
			names[i] = m.Name
		}
		return fmt.Errorf("postgres: %w (missing %s)", ErrSchemaNotMigrated, strings.Join(names, ", "))
	}
	return nil
}

type recordedStep struct {
	version  int
	checksum string
}

func recordedMigrations(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}) ([]recordedStep, error) {
	rows, err := q.Query(ctx, `SELECT version, checksum FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("postgres: read schema_migrations: %w", err)
	}
	steps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (recordedStep, error) {
		var s recordedStep
		err := r.Scan(&s.version, &s.checksum)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read schema_migrations: %w", err)
	}
	return steps, nil
}

// compareSchema checks the recorded steps against the embedded ones and
// returns the embedded steps not yet applied, in order.
func compareSchema(recorded []recordedStep) ([]Migration, error) {
	known := embedded()
	done := map[int]bool{}
	for _, r := range recorded {
		if r.version < 1 || r.version > len(known) {
			return nil, fmt.Errorf("postgres: %w: database has step %d, this binary knows 1–%d", ErrSchemaTooNew, r.version, len(known))
		}
		if m := known[r.version-1]; r.checksum != m.Checksum {
			return nil, fmt.Errorf("postgres: %w: step %d (%s) was applied with checksum %.12s…, the embedded file has %.12s…",
				ErrSchemaChecksum, r.version, m.Name, r.checksum, m.Checksum)
		}
		done[r.version] = true
	}
	var missing []Migration
	for _, m := range known {
		if !done[m.Version] {
			missing = append(missing, m)
		}
	}
	return missing, nil
}
