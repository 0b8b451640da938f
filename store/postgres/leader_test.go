package postgres_test

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/store/postgres"
)

var _ retention.Leader = (*postgres.Leader)(nil)

func lead(t *testing.T, l *postgres.Leader) bool {
	t.Helper()
	ok, err := l.Lead(context.Background())
	if err != nil {
		t.Fatalf("Lead: %v", err)
	}
	return ok
}

// eventually polls cond for up to limit: a session's locks outlive its
// client for the moment the server takes to notice the disconnect.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lockHolder is the backend pid holding the leader lock in this test's
// database, or 0.
func lockHolder(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var pid int
	err := conn.QueryRow(context.Background(), `SELECT coalesce(max(pid), 0) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND classid = 1667328370 AND objid = 1848469347 AND objsubid = 1
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&pid)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestLeaderWaitsForTheHolderAndReleasesOnClose(t *testing.T) {
	ctx := context.Background()
	db, url := connect(t)
	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, postgres.LeaderLockKey); err != nil {
		t.Fatal(err)
	}
	l := db.Leader()
	if lead(t, l) {
		t.Fatal("Lead succeeded while another session holds the lock")
	}
	// A collector that cannot lead reports it and scans nothing.
	col := &retention.Collector{Universes: retention.Single("u", openStore(t, db, "u", nil)), Leader: l}
	if st, err := col.Collect(ctx, retention.Options{}); err != nil || !st.LeaderBusy || st.UniversesScanned != 0 {
		t.Fatalf("Collect as a follower = %+v, %v", st, err)
	}

	if err := holder.Close(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "Lead after the holder's connection closed", func() bool { return lead(t, l) })
	// Leading again is a check, not another lock: one unlock must release it.
	if !lead(t, l) || !lead(t, l) {
		t.Fatal("the leader stopped leading")
	}
	conn := sql(t, url)
	var app string
	if err := conn.QueryRow(ctx, `SELECT application_name FROM pg_stat_activity WHERE pid = $1`, lockHolder(t, conn)).Scan(&app); err != nil || app != "cairn collector" {
		t.Errorf("the lock holder's application_name = %q, %v", app, err)
	}
	other := db.Leader()
	if lead(t, other) {
		t.Fatal("two leaders")
	}
	if err := l.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !lead(t, other) {
		t.Fatal("Close did not release the lock")
	}
	if err := other.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if pid := lockHolder(t, conn); pid != 0 {
		t.Fatalf("backend %d still holds the lock after Close", pid)
	}
	if err := other.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestLeaderReacquiresAfterItsConnectionDrops(t *testing.T) {
	ctx := context.Background()
	db, url := connect(t)
	conn := sql(t, url)
	l := db.Leader()
	t.Cleanup(func() { _ = l.Close(ctx) })
	if !lead(t, l) {
		t.Fatal("Lead on a free lock")
	}
	first := lockHolder(t, conn)
	if first == 0 {
		t.Fatal("nobody holds the lock after Lead")
	}
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend($1)`, first); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "Lead on a fresh connection", func() bool { return lead(t, l) })
	if second := lockHolder(t, conn); second == 0 || second == first {
		t.Fatalf("lock holder after the drop = %d, was %d", second, first)
	}
}

// The two-process test: helper processes (this test binary re-executed)
// run the background collector with the leader over a catalog that records
// each scan, tagged with the process's name and the server's clock.

const (
	helperURL  = "CAIRN_LEADER_HELPER_URL"
	helperName = "CAIRN_LEADER_HELPER_NAME"
)

// markingCatalog records each scan in leader_marks and holds no blobs.
type markingCatalog struct {
	conn *pgx.Conn // the collector's passes are serialised
	name string
}

func (m markingCatalog) ScanBlobs(ctx context.Context, _ store.BlobCursor, _ time.Time, _ int) ([]store.CatalogRow, error) {
	_, err := m.conn.Exec(ctx, `INSERT INTO leader_marks (name, at) VALUES ($1, clock_timestamp())`, m.name)
	return nil, err
}

func (markingCatalog) DeleteDeadBlobs(context.Context, []content.Digest, time.Time) ([]store.DeletedBlob, error) {
	return nil, nil
}

func (markingCatalog) DeleteObject(context.Context, string) error { return nil }

func (markingCatalog) LoadBlobCursor(context.Context) (store.BlobCursor, error) {
	return store.BlobCursor{}, nil
}

func (markingCatalog) SaveBlobCursor(context.Context, store.BlobCursor) error { return nil }

// TestLeaderHelperProcess is one collector process of
// TestLeaderHandsOverBetweenProcesses; alone, it does nothing. It collects
// every 20 ms until interrupted, then releases the lock.
func TestLeaderHelperProcess(t *testing.T) {
	url := os.Getenv(helperURL)
	if url == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	db, err := postgres.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	l := db.Leader()
	col := &retention.Collector{
		Universes: retention.Single("u", markingCatalog{conn: conn, name: os.Getenv(helperName)}),
		Leader:    l,
	}
	col.Run(ctx, 20*time.Millisecond, retention.Options{Grace: time.Hour})
	if err := l.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestLeaderHandsOverBetweenProcesses(t *testing.T) {
	ctx := context.Background()
	_, url := connect(t)
	conn := sql(t, url)
	if _, err := conn.Exec(ctx, `CREATE TABLE leader_marks (name text NOT NULL, at timestamptz NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	start := func(name string) (*exec.Cmd, *testenv.Buffer) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLeaderHelperProcess$", "-test.count=1", "-test.timeout=0")
		cmd.Env = append(os.Environ(), helperURL+"="+url, helperName+"="+name)
		out := &testenv.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill() // a no-op for one already waited for
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("collector %s said:\n%s", name, out)
			}
		})
		return cmd, out
	}
	// marks returns how many scans name recorded and when the first and last ran.
	marks := func(name string) (n int, first, last time.Time) {
		t.Helper()
		err := conn.QueryRow(ctx, `SELECT count(*), coalesce(min(at), 'epoch'), coalesce(max(at), 'epoch')
			FROM leader_marks WHERE name = $1`, name).Scan(&n, &first, &last)
		if err != nil {
			t.Fatal(err)
		}
		return n, first, last
	}
	scanned := func(name string) func() bool {
		return func() bool { n, _, _ := marks(name); return n > 0 }
	}
	// noOverlap asserts that every scan of before precedes every scan of after.
	noOverlap := func(before, after string) {
		t.Helper()
		_, _, lastBefore := marks(before)
		_, firstAfter, _ := marks(after)
		if !lastBefore.Before(firstAfter) {
			t.Fatalf("%s scanned at %v, before %s's last scan at %v", after, firstAfter, before, lastBefore)
		}
	}

	a, _ := start("a")
	eventually(t, 10*time.Second, "collector a scanning", scanned("a"))
	b, bOut := start("b")
	// b runs a pass every 20 ms: a second gives it about 50 elections to lose.
	time.Sleep(time.Second)
	if n, _, _ := marks("b"); n != 0 {
		t.Fatalf("b scanned %d times while a led", n)
	}

	// Killed: the server ends a's session when its socket closes.
	if err := a.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = a.Wait()
	killed := time.Now()
	eventually(t, 10*time.Second, "b taking over from the killed a", scanned("b"))
	t.Logf("handover after a kill: %v", time.Since(killed).Round(time.Millisecond))
	noOverlap("a", "b")

	start("c")
	time.Sleep(time.Second)
	if n, _, _ := marks("c"); n != 0 {
		t.Fatalf("c scanned %d times while b led", n)
	}
	// Interrupted: b stops its collector, unlocks and exits cleanly.
	if err := b.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("b after an interrupt: %v\n%s", err, bOut)
	}
	stopped := time.Now()
	eventually(t, 5*time.Second, "c taking over from the stopped b", scanned("c"))
	t.Logf("handover after a clean stop: %v", time.Since(stopped).Round(time.Millisecond))
	noOverlap("b", "c")
}
