package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/store/postgres"
)

// connectBare returns a pool to a fresh database without migrating it.
func connectBare(t *testing.T) (*postgres.DB, string) {
	t.Helper()
	url := testenv.PostgresURL(t)
	db, err := postgres.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(db.Close)
	return db, url
}

func TestMigrateAppliesOnceThenIsANoOp(t *testing.T) {
	ctx := context.Background()
	db, url := connectBare(t)
	applied, err := db.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all := postgres.Migrations()
	if len(all) == 0 || len(applied) != len(all) {
		t.Fatalf("first Migrate applied %d of %d steps", len(applied), len(all))
	}
	for i, m := range applied {
		if m != all[i] || m.Version != i+1 || len(m.Checksum) != 64 {
			t.Fatalf("applied step %d = %+v, want %+v", i, m, all[i])
		}
	}
	if err := db.CheckSchema(ctx); err != nil {
		t.Fatalf("CheckSchema after Migrate: %v", err)
	}
	again, err := db.Migrate(ctx)
	if err != nil || len(again) != 0 {
		t.Fatalf("second Migrate applied %v, %v; want nothing", again, err)
	}
	if n := countRows(t, sql(t, url), `SELECT count(*) FROM schema_migrations`); n != len(all) {
		t.Fatalf("schema_migrations has %d rows, want %d", n, len(all))
	}
}

func TestConnectDoesNotMigrate(t *testing.T) {
	ctx := context.Background()
	db, url := connectBare(t)
	err := db.CheckSchema(ctx)
	if !errors.Is(err, postgres.ErrSchemaNotMigrated) || !strings.Contains(err.Error(), "cairn migrate") {
		t.Fatalf("CheckSchema on an empty database: %v, want ErrSchemaNotMigrated naming `cairn migrate`", err)
	}
	if n := countRows(t, sql(t, url), `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`); n != 0 {
		t.Fatalf("Connect and CheckSchema created %d tables", n)
	}
}

func TestCheckSchemaRefusesUnknownSchemas(t *testing.T) {
	cases := []struct {
		name   string
		tamper string
		want   error
	}{
		{"tampered checksum", `UPDATE schema_migrations SET checksum = repeat('0', 64) WHERE version = 1`, postgres.ErrSchemaChecksum},
		{"unknown version", `INSERT INTO schema_migrations VALUES (9999, '9999_future.sql', repeat('0', 64), now())`, postgres.ErrSchemaTooNew},
		{"missing version", `DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)`, postgres.ErrSchemaNotMigrated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db, url := connect(t)
			if _, err := sql(t, url).Exec(ctx, tc.tamper); err != nil {
				t.Fatal(err)
			}
			if err := db.CheckSchema(ctx); !errors.Is(err, tc.want) {
				t.Fatalf("CheckSchema: %v, want %v", err, tc.want)
			}
			if tc.want == postgres.ErrSchemaNotMigrated {
				return // Migrate would try to re-apply the step: not a refusal case
			}
			// Migrate refuses too rather than build on a schema it does not know.
			if applied, err := db.Migrate(ctx); !errors.Is(err, tc.want) {
				t.Fatalf("Migrate: applied %v, %v; want %v", applied, err, tc.want)
			}
		})
	}
}

func TestConcurrentMigratorsApplyEachStepOnce(t *testing.T) {
	ctx := context.Background()
	url := testenv.PostgresURL(t)
	const migrators = 4
	var wg sync.WaitGroup
	applied := make([]int, migrators)
	errs := make([]error, migrators)
	for i := range migrators {
		db, err := postgres.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		wg.Go(func() {
			steps, err := db.Migrate(ctx)
			applied[i], errs[i] = len(steps), err
		})
	}
	wg.Wait()
	total := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migrator %d: %v", i, err)
		}
		if applied[i] != 0 && applied[i] != len(postgres.Migrations()) {
			t.Fatalf("migrator %d applied %d steps: a partial migration", i, applied[i])
		}
		total += applied[i]
	}
	if total != len(postgres.Migrations()) {
		t.Fatalf("migrators applied %v steps in all, want each of %d once", applied, len(postgres.Migrations()))
	}
}

func TestConnectErrorsDoNotRevealThePassword(t *testing.T) {
	const secret = "s3cr3t-Pw"
	for _, url := range []string{
		"postgres://cairn:" + secret + "@127.0.0.1:1/cairn?connect_timeout=2",
		"postgres://cairn:" + secret + "@127.0.0.1:notaport/cairn",
		"postgres://cairn@127.0.0.1:1/cairn?password=" + secret + "&connect_timeout=2",
		"host=127.0.0.1 port=1 user=cairn password=" + secret + " connect_timeout=2",
		"host=127.0.0.1 port=x user=cairn password='" + secret + "'",
	} {
		db, err := postgres.Connect(context.Background(), url)
		if err == nil {
			db.Close()
			t.Fatalf("Connect(%q) succeeded", url)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("Connect error reveals the password: %v", err)
		}
	}
}
