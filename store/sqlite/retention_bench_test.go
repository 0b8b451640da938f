package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/store/sqlite"
)

// benchRows is the size of a full pass: the collector's per-universe bound.
const benchRows = retention.MaxRowsPerPass

// retentionBench is a store with a second, raw connection to its database
// for seeding rows in bulk.
type retentionBench struct {
	st  *sqlite.Store
	raw *sql.DB
}

func newRetentionBench(b *testing.B) retentionBench {
	b.Helper()
	dir := b.TempDir()
	st, err := sqlite.Open(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	raw, err := sql.Open("sqlite", filepath.Join(dir, "cairn.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { raw.Close() })
	return retentionBench{st: st, raw: raw}
}

// blobsJSON lists n blobs named label 1..n as [digest, body] pairs, each
// digest the body's real SHA-256.
func blobsJSON(b *testing.B, label string, n int) string {
	b.Helper()
	pairs := make([][2]string, n)
	for i := range pairs {
		body := fmt.Sprintf("%s %d", label, i+1)
		pairs[i] = [2]string{content.Sum([]byte(body)).String(), body}
	}
	raw, err := json.Marshal(pairs)
	if err != nil {
		b.Fatal(err)
	}
	return string(raw)
}

// seed inserts the blobs of list in one statement, inline, touched a month
// ago one millisecond apart (so the scan order is the list's order), then
// runs holders (statements over the same list) in the same transaction.
func (r retentionBench) seed(b *testing.B, list string, holders ...string) {
	b.Helper()
	ctx := context.Background()
	tx, err := r.raw.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	monthAgo := time.Now().Add(-30 * 24 * time.Hour).UnixMilli()
	if _, err := tx.ExecContext(ctx, `INSERT INTO blobs (universe, digest, size, inline, created_at_ms, touched_at_ms)
		SELECT 'default', value ->> 0, length(CAST(value ->> 1 AS BLOB)), CAST(value ->> 1 AS BLOB), ?1, ?1 + key
		FROM json_each(?2)`, monthAgo, list); err != nil {
		b.Fatalf("seeding blobs: %v", err)
	}
	for _, q := range holders {
		if _, err := tx.ExecContext(ctx, q, list); err != nil {
			b.Fatalf("seeding holders: %v", err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// collectOnce runs a pass at the default grace from the start of the
// catalog: a full pass stops at its row bound and saves its cursor there.
func (r retentionBench) collectOnce(ctx context.Context) (retention.Stats, error) {
	if err := r.st.SaveBlobCursor(ctx, store.BlobCursor{}); err != nil {
		return retention.Stats{}, err
	}
	c := &retention.Collector{Universes: retention.Single(r.st.Universe(), r.st), Deadline: time.Hour}
	return c.Collect(ctx, retention.Options{Grace: retention.DefaultGrace})
}

func reportPass(b *testing.B, rows int) {
	pages := (rows + retention.PageSize - 1) / retention.PageSize
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(pages*b.N), "ms/page")
}

// BenchmarkCollectRetained is one pass over 100,000 blobs past their grace
// that are all held, so it deletes nothing: odd ones by a session's roots,
// even ones by edges from blob 1 (itself a root). Same as postgres's.
func BenchmarkCollectRetained(b *testing.B) {
	ctx := context.Background()
	r := newRetentionBench(b)
	openBenchSession(b, r.st, "holder")
	// json_each's key is 0-based: even keys are the odd blobs.
	r.seed(b, blobsJSON(b, "retained", benchRows),
		`INSERT INTO session_roots (universe, session_id, digest)
			SELECT 'default', 'holder', value ->> 0 FROM json_each(?) WHERE key % 2 = 0`,
		`INSERT INTO retention_edges (universe, parent, child)
			SELECT 'default', (SELECT value ->> 0 FROM json_each(?1) WHERE key = 0), value ->> 0
			FROM json_each(?1) WHERE key % 2 = 1`)
	b.ResetTimer()
	for range b.N {
		st, err := r.collectOnce(ctx)
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
	r := newRetentionBench(b)
	list := blobsJSON(b, "unheld", benchRows)
	b.StopTimer()
	for range b.N {
		r.seed(b, list)
		b.StartTimer()
		st, err := r.collectOnce(ctx)
		b.StopTimer()
		if err != nil || st.RowsScanned != benchRows || st.RowsDeleted != benchRows {
			b.Fatalf("pass = %+v, %v", st, err)
		}
	}
	var left int
	if err := r.raw.QueryRowContext(ctx, `SELECT count(*) FROM blobs`).Scan(&left); err != nil || left != 0 {
		b.Fatalf("%d blobs left, %v", left, err)
	}
	reportPass(b, benchRows)
}
