package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/store/postgres"
)

// benchRows is the size of a full pass: the collector's per-universe bound.
const benchRows = retention.MaxRowsPerPass

// seedBlobs inserts n inline blobs named label 1..n, in one statement, all
// touched a month ago (one millisecond apart, so the scan order is the
// insertion order) and so past the default grace. Each body is its text
// and each digest the body's real SHA-256.
func seedBlobs(b *testing.B, conn *pgx.Conn, universe, label string, n int) {
	b.Helper()
	_, err := conn.Exec(context.Background(), `INSERT INTO blobs (universe, digest, size, inline, created_at, touched_at)
		SELECT $1, sha256(body), length(body), body, t, t
		FROM (SELECT convert_to($2 || i, 'UTF8') AS body,
			now() - interval '30 days' + i * interval '1 millisecond' AS t
			FROM generate_series(1, $3::int) AS i) AS g`, universe, label+" ", n)
	if err != nil {
		b.Fatalf("seeding blobs: %v", err)
	}
}

// vacuum refreshes the planner's statistics and clears dead rows, so every
// measured pass starts from the same table state.
func vacuum(b *testing.B, conn *pgx.Conn) {
	b.Helper()
	if _, err := conn.Exec(context.Background(), `VACUUM ANALYZE blobs, session_roots, retention_edges`); err != nil {
		b.Fatal(err)
	}
}

func reportPass(b *testing.B, rows int) {
	pages := (rows + retention.PageSize - 1) / retention.PageSize
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(pages*b.N), "ms/page")
}

// BenchmarkCollectRetained is one pass over 100,000 blobs past their grace
// that are all held, so it scans and deletes nothing: odd ones by a
// session's roots, even ones by edges from blob 1 (itself a root), so both
// the first and the last probe of the holder predicate are exercised.
func BenchmarkCollectRetained(b *testing.B) {
	ctx := context.Background()
	db, url := connect(b)
	s := openStore(b, db, "bench", nil)
	conn := sql(b, url)
	if _, err := s.Append(ctx, "holder", 0, []core.Proposal{{ObservedAtMs: 1, Kind: core.KindSessionOpened,
		Version: core.EventVersion, Payload: []byte(`{"sessionId":"holder"}`)}}); err != nil {
		b.Fatal(err)
	}
	seedBlobs(b, conn, "bench", "retained", benchRows)
	for _, q := range []string{
		`INSERT INTO session_roots (universe, session_id, digest)
			SELECT 'bench', 'holder', sha256(convert_to('retained ' || i, 'UTF8')) FROM generate_series(1, $1::int, 2) AS i`,
		`INSERT INTO retention_edges (universe, parent, child)
			SELECT 'bench', sha256(convert_to('retained 1', 'UTF8')), sha256(convert_to('retained ' || i, 'UTF8'))
			FROM generate_series(2, $1::int, 2) AS i`,
	} {
		if _, err := conn.Exec(ctx, q, benchRows); err != nil {
			b.Fatalf("seeding holders: %v", err)
		}
	}
	vacuum(b, conn)
	b.ResetTimer()
	for range b.N {
		st, err := collectOnce(ctx, s)
		if err != nil || st.RowsScanned != benchRows || st.Candidates != 0 || st.RowsDeleted != 0 {
			b.Fatalf("pass = %+v, %v", st, err)
		}
	}
	b.StopTimer()
	reportPass(b, benchRows)
}

// BenchmarkCollectUnheld is one pass over 100,000 inline blobs that nothing
// holds: every page is scanned, then deleted by the statement that
// re-checks the dead predicate. The rows are re-seeded, untimed, before
// each pass.
func BenchmarkCollectUnheld(b *testing.B) {
	ctx := context.Background()
	db, url := connect(b)
	s := openStore(b, db, "bench", nil)
	conn := sql(b, url)
	b.StopTimer()
	for range b.N {
		seedBlobs(b, conn, "bench", "unheld", benchRows)
		vacuum(b, conn)
		b.StartTimer()
		st, err := collectOnce(ctx, s)
		b.StopTimer()
		if err != nil || st.RowsScanned != benchRows || st.RowsDeleted != benchRows {
			b.Fatalf("pass = %+v, %v", st, err)
		}
	}
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM blobs WHERE universe = 'bench'`).Scan(&left); err != nil || left != 0 {
		b.Fatalf("%d blobs left, %v", left, err)
	}
	reportPass(b, benchRows)
}

// collectOnce runs a pass at the default grace from the start of the
// catalog: a full pass stops at its row bound and saves its cursor there.
func collectOnce(ctx context.Context, s *postgres.Store) (retention.Stats, error) {
	if err := s.SaveBlobCursor(ctx, store.BlobCursor{}); err != nil {
		return retention.Stats{}, err
	}
	c := &retention.Collector{Universes: retention.Single("bench", s), Deadline: time.Hour}
	return c.Collect(ctx, retention.Options{Grace: retention.DefaultGrace})
}
