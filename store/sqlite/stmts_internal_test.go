package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// testDB opens a database of one connection, as the writer pool is, with a
// table t of the integers 1 to n.
func testDB(t *testing.T, n int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(filepath.Join(t.TempDir(), "t.db"), true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE t (x INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) INSERT INTO t SELECT x FROM c`, n); err != nil {
		t.Fatal(err)
	}
	return db
}

func count(t *testing.T, ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}, above int) int {
	t.Helper()
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE x > ?`, above).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestStmtCachePreparesOnFirstUseOutsideTransactions(t *testing.T) {
	ctx := context.Background()
	c := newStmtCache(testDB(t, 10))
	defer c.close()
	if got := count(t, ctx, c, 3); got != 7 {
		t.Fatalf("count = %d, want 7", got)
	}
	st := c.lookup(`SELECT count(*) FROM t WHERE x > ?`)
	if st == nil {
		t.Fatal("not prepared on first use")
	}
	if got := count(t, ctx, c, 8); got != 2 || c.lookup(`SELECT count(*) FROM t WHERE x > ?`) != st || len(c.stmts) != 1 {
		t.Fatalf("second use: count %d, %d statements", got, len(c.stmts))
	}
}

// A transaction holds the writer's only connection, so a statement it meets
// unprepared must run as text (preparing on the pool would wait for that
// connection forever) and be prepared once the transaction has ended.
func TestStmtCacheTransactionPreparesAfterItEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := testDB(t, 10)
	c := newStmtCache(db)
	defer c.close()
	const ins = `INSERT INTO t (x) VALUES (?)`
	for i, x := range []int{11, 12} {
		begun, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		tx := c.tx(begun)
		if _, err := tx.ExecContext(ctx, ins, x); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if got := count(t, ctx, tx, 0); got != 10+i+1 {
			t.Fatalf("round %d: count in transaction = %d", i, got)
		}
		if err := begun.Commit(); err != nil {
			t.Fatal(err)
		}
		if i == 0 && (len(c.stmts) != 0 || !c.want[ins]) {
			t.Fatalf("first transaction: %d statements prepared, want %v; want none prepared and the insert wanted", len(c.stmts), c.want)
		}
		c.prepareWanted(ctx)
		if c.lookup(ins) == nil || len(c.want) != 0 {
			t.Fatalf("round %d: the insert is not prepared after the transaction (want %v)", i, c.want)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("deadlocked")
	}
}

func TestStmtCacheClosedRunsTextAndFailsAsThePoolDoes(t *testing.T) {
	ctx := context.Background()
	db := testDB(t, 3)
	c := newStmtCache(db)
	count(t, ctx, c, 0)
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	if got := count(t, ctx, c, 1); got != 2 {
		t.Fatalf("count after the cache closed = %d, want 2 (through the pool)", got)
	}
	if len(c.stmts) != 0 {
		t.Fatalf("a closed cache prepared %d statements", len(c.stmts))
	}
	db.Close()
	_, errText := db.ExecContext(ctx, `DELETE FROM t`)
	_, err := c.ExecContext(ctx, `DELETE FROM t`)
	if err == nil || errText == nil || err.Error() != errText.Error() {
		t.Fatalf("closed: %v, want %v", err, errText)
	}
}

func TestStmtCacheCancelledContext(t *testing.T) {
	db := testDB(t, 5000)
	c := newStmtCache(db)
	defer c.close()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	// Unprepared and prepared alike.
	for i := range 2 {
		var n int
		if err := c.QueryRowContext(cancelled, `SELECT count(*) FROM t WHERE x > ?`, 0).Scan(&n); !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: %v, want context.Canceled", i, err)
		}
		count(t, context.Background(), c, 0)
	}

	// Rows of a prepared statement cut short by their context leave the
	// statement reusable.
	const q = `SELECT x FROM t WHERE x > ? ORDER BY x`
	for round := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		rows, err := c.QueryContext(ctx, q, 0)
		if err != nil {
			t.Fatal(err)
		}
		read := 0
		for rows.Next() { // stops once database/sql sees the cancellation
			if read++; read == 10 {
				cancel()
			}
		}
		if err := rows.Err(); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: read %d rows, then %v", round, read, err)
		}
		rows.Close()
		cancel()
		if got := count(t, context.Background(), c, 0); got != 5000 {
			t.Fatalf("round %d: count after a cancelled read = %d", round, got)
		}
		rows, err = c.QueryContext(context.Background(), q, 4990)
		if err != nil {
			t.Fatal(err)
		}
		var xs []int
		for rows.Next() {
			var x int
			if err := rows.Scan(&x); err != nil {
				t.Fatal(err)
			}
			xs = append(xs, x)
		}
		if err := rows.Err(); err != nil || len(xs) != 10 || xs[0] != 4991 {
			t.Fatalf("round %d: reread %v, %v", round, xs, err)
		}
	}
	if c.lookup(q) == nil {
		t.Fatal("query not prepared")
	}
}

func TestStmtCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	c := newStmtCache(testDB(t, 1))
	defer c.close()
	for i := range maxStmts + 10 {
		var n int
		if err := c.QueryRowContext(ctx, fmt.Sprintf(`SELECT %d`, i)).Scan(&n); err != nil || n != i {
			t.Fatalf("SELECT %d = %d, %v", i, n, err)
		}
	}
	if len(c.stmts) != maxStmts {
		t.Fatalf("%d statements kept, want %d", len(c.stmts), maxStmts)
	}
}

// TestStoreStatementsArePreparedOnce runs the calls of a turn twice: the
// first prepares every statement (a read transaction's once it has
// ended), the second prepares nothing.
func TestStoreStatementsArePreparedOnce(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	openedSession(t, s, "s1", 1)
	head := int64(1)
	turn := func(i int) {
		d := mustPut(t, s, fmt.Appendf(nil, "turn %d", i))
		if missing, err := s.Touch(ctx, []content.Digest{d}); err != nil || len(missing) != 0 {
			t.Fatal(missing, err)
		}
		refs, _ := digestsJSON([]content.Digest{d})
		evs, err := s.Append(ctx, "s1", head, []core.Proposal{{ObservedAtMs: 3, Kind: "test.refs", Version: core.EventVersion,
			Payload: []byte(refs), Refs: []content.Digest{d}}})
		if err != nil {
			t.Fatal(err)
		}
		head = evs[0].Seq
		if err := s.PutEdges(ctx, mustPut(t, s, fmt.Appendf(nil, "index %d", i)), []content.Digest{d}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, d); err != nil {
			t.Fatal(err)
		}
		if l, err := s.Session(ctx, "s1"); err != nil || l.Head != head {
			t.Fatal(l, err)
		}
		if evs, err := s.ReadAfter(ctx, "s1", head-1, 10); err != nil || len(evs) != 1 {
			t.Fatal(evs, err)
		}
	}
	turn(0)
	writes, reads := maps.Clone(s.writes.stmts), maps.Clone(s.reads.stmts)
	if len(s.reads.want) != 0 {
		t.Fatalf("left unprepared: %v", s.reads.want)
	}
	for _, q := range []string{"INSERT INTO events", "INSERT INTO sessions", "INSERT OR IGNORE INTO session_roots",
		"INSERT OR IGNORE INTO retention_edges", "UPDATE blobs SET touched_at_ms", "BEGIN IMMEDIATE", "COMMIT"} {
		if !anyKey(writes, q) {
			t.Errorf("no prepared writer statement %q", q)
		}
	}
	if !anyKey(reads, "FROM events WHERE") || !anyKey(reads, "SELECT lifecycle FROM sessions") {
		t.Errorf("reads not prepared: %d statements", len(reads))
	}
	turn(1)
	if !maps.Equal(writes, s.writes.stmts) || !maps.Equal(reads, s.reads.stmts) {
		t.Fatalf("the second turn prepared statements again: %d -> %d writer, %d -> %d reader",
			len(writes), len(s.writes.stmts), len(reads), len(s.reads.stmts))
	}
}

func anyKey(m map[string]*sql.Stmt, part string) bool {
	for k := range m {
		if strings.Contains(k, part) {
			return true
		}
	}
	return false
}

// TestStoreAfterCloseFails: a closed store's calls fail as they did before
// statements were prepared, with the pool's "database is closed".
func TestStoreAfterCloseFails(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	openedSession(t, s, "s1", 1)
	d := mustPut(t, s, []byte("x"))
	if _, err := s.Get(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"Put": func() error { _, err := s.Put(ctx, []byte("y")); return err },
		"Get": func() error { _, err := s.Get(ctx, d); return err },
		"Append": func() error {
			_, err := s.Append(ctx, "s1", 1, []core.Proposal{{ObservedAtMs: 3, Kind: "test.note", Version: core.EventVersion, Payload: []byte(`{}`)}})
			return err
		},
		"Session":   func() error { _, err := s.Session(ctx, "s1"); return err },
		"ReadAfter": func() error { _, err := s.ReadAfter(ctx, "s1", 0, 0); return err },
		"Touch":     func() error { _, err := s.Touch(ctx, []content.Digest{d}); return err },
	}
	for name, call := range calls {
		if err := call(); err == nil || !strings.Contains(err.Error(), "database is closed") {
			t.Errorf("%s after Close: %v, want database is closed", name, err)
		}
	}
}

// TestStoreCancelledContext: a cancelled call fails with its context's
// error and leaves the statements it would have used working.
func TestStoreCancelledContext(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	openedSession(t, s, "s1", 3)
	d := mustPut(t, s, []byte("x"))
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for round := range 2 { // before and after the statements are prepared
		calls := map[string]func(context.Context) error{
			"Put":       func(ctx context.Context) error { _, err := s.Put(ctx, []byte("y")); return err },
			"Get":       func(ctx context.Context) error { _, err := s.Get(ctx, d); return err },
			"Session":   func(ctx context.Context) error { _, err := s.Session(ctx, "s1"); return err },
			"ReadAfter": func(ctx context.Context) error { _, err := s.ReadAfter(ctx, "s1", 0, 0); return err },
			"Touch":     func(ctx context.Context) error { _, err := s.Touch(ctx, []content.Digest{d}); return err },
			"Append": func(ctx context.Context) error {
				_, err := s.Append(ctx, "s1", int64(3+round), []core.Proposal{{ObservedAtMs: 3, Kind: "test.note", Version: core.EventVersion, Payload: []byte(`{}`)}})
				return err
			},
		}
		for _, name := range []string{"Put", "Get", "Session", "ReadAfter", "Touch", "Append"} {
			if err := calls[name](cancelled); !errors.Is(err, context.Canceled) {
				t.Errorf("round %d: %s with a cancelled context: %v", round, name, err)
			}
			if err := calls[name](ctx); err != nil {
				t.Errorf("round %d: %s after a cancelled call: %v", round, name, err)
			}
		}
	}
}

// TestStoreConcurrentPreparedUse shares the prepared statements between
// writers and readers on every pool connection (run with -race).
func TestStoreConcurrentPreparedUse(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	const sessions, rounds = 4, 30
	var wg sync.WaitGroup
	errs := make(chan error, 2*sessions)
	for i := range sessions {
		id := fmt.Sprintf("s%d", i)
		wg.Go(func() {
			for r := range rounds {
				d, err := s.Put(ctx, fmt.Appendf(nil, "%s/%d", id, r))
				if err == nil {
					refs, _ := digestsJSON([]content.Digest{d})
					props := []core.Proposal{{ObservedAtMs: 2, Kind: "test.refs", Version: core.EventVersion, Payload: []byte(refs), Refs: []content.Digest{d}}}
					if r == 0 {
						props = append([]core.Proposal{{ObservedAtMs: 1, Kind: core.KindSessionOpened, Version: core.EventVersion, Payload: []byte(`{"sessionId":"` + id + `"}`)}}, props...)
					}
					head := int64(0) // the first append is two events
					if r > 0 {
						head = int64(r + 1)
					}
					_, err = s.Append(ctx, id, head, props)
				}
				if err != nil {
					errs <- fmt.Errorf("%s round %d: %w", id, r, err)
					return
				}
			}
		})
		wg.Go(func() {
			for r := range 4 * rounds {
				l, err := s.Session(ctx, id)
				if err != nil {
					continue // not opened yet
				}
				evs, err := s.ReadAfter(ctx, id, 0, 0)
				if err == nil && int64(len(evs)) < l.Head {
					err = fmt.Errorf("read %d events below head %d", len(evs), l.Head)
				}
				for _, ev := range evs[min(1, len(evs)):] {
					var refs []content.Digest
					if err == nil {
						err = json.Unmarshal(ev.Payload, &refs)
					}
					if err == nil {
						_, err = s.Get(ctx, refs[0])
					}
				}
				if err != nil {
					errs <- fmt.Errorf("reader of %s round %d: %w", id, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range sessions {
		if l, err := s.Session(ctx, fmt.Sprintf("s%d", i)); err != nil || l.Head != rounds+1 {
			t.Errorf("s%d: head %d, %v; want %d", i, l.Head, err, rounds+1)
		}
	}
}
