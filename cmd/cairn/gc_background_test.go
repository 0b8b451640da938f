package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/store/postgres"
	"github.com/cairn-agents/cairn/store/sqlite"
)

// gcCmd is a command with serve's collector flags, parsed from args.
func gcCmd(t *testing.T, args ...string) (*cobra.Command, gcFlags) {
	t.Helper()
	var g gcFlags
	cmd := &cobra.Command{Use: "serve"}
	g.register(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return cmd, g
}

func TestGCFlags(t *testing.T) {
	cmd, g := gcCmd(t)
	if got, err := g.resolve(cmd); err != nil || got.interval != time.Hour || got.grace != retention.DefaultGrace {
		t.Fatalf("defaults = %+v, %v", got, err)
	}
	t.Setenv("CAIRN_GC_INTERVAL", "5m")
	t.Setenv("CAIRN_GC_GRACE", "0")
	if got, err := g.resolve(cmd); err != nil || got.interval != 5*time.Minute || got.grace != 0 {
		t.Fatalf("from the environment = %+v, %v", got, err)
	}
	cmd, g = gcCmd(t, "--gc-interval", "2m", "--gc-grace", "48h")
	if got, err := g.resolve(cmd); err != nil || got.interval != 2*time.Minute || got.grace != 48*time.Hour {
		t.Fatalf("flags over the environment = %+v, %v", got, err)
	}
	t.Setenv("CAIRN_GC_INTERVAL", "hourly")
	cmd, g = gcCmd(t)
	if _, err := g.resolve(cmd); err == nil || !strings.Contains(err.Error(), "CAIRN_GC_INTERVAL") {
		t.Fatalf("a malformed CAIRN_GC_INTERVAL: %v", err)
	}
	cmd, g = gcCmd(t, "--gc-interval", "1h", "--gc-grace", "-1s")
	if _, err := g.resolve(cmd); err == nil {
		t.Fatal("a negative grace was accepted")
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBackgroundGCEmbedded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	garbage, err := st.Put(ctx, []byte("nobody holds this"))
	if err != nil {
		t.Fatal(err)
	}
	present := func() bool {
		missing, err := st.Missing(ctx, []content.Digest{garbage})
		if err != nil {
			t.Fatal(err)
		}
		return len(missing) == 0
	}

	// Disabled by a zero grace: nothing runs however short the interval.
	cmd, _ := gcCmd(t)
	stop, err := startBackgroundGC(ctx, cmd, serveOptions{dataDir: dir, gc: gcFlags{interval: time.Millisecond}}, quietLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	stop()
	if !present() {
		t.Fatal("a disabled collector deleted a blob")
	}

	var logs testenv.Buffer
	var freed atomic.Int64 // what the passes' hook heard (the metrics' source)
	stop, err = startBackgroundGC(ctx, cmd, serveOptions{dataDir: dir, gc: gcFlags{interval: 20 * time.Millisecond, grace: time.Millisecond}},
		slog.New(slog.NewTextHandler(&logs, nil)), func(st retention.Stats, err error) {
			if err == nil {
				freed.Add(st.BytesFreed)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the background collector deleting the blob", func() bool { return !present() })
	eventually(t, "the pass hook hearing the freed bytes", func() bool { return freed.Load() > 0 })
	// The pass that deleted it logs once it returns.
	eventually(t, "a logged pass", func() bool { return strings.Contains(logs.String(), "retention: pass") })
	stop()
}

func TestBackgroundGCHosted(t *testing.T) {
	ctx := context.Background()
	url := testenv.PostgresURL(t)
	db, err := postgres.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var stores []*postgres.Store
	var garbage []content.Digest
	for _, u := range []string{"acme", "globex"} {
		if err := db.EnsureUniverse(ctx, u); err != nil {
			t.Fatal(err)
		}
		s, err := db.Store(ctx, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.Put(ctx, []byte("garbage of "+u))
		if err != nil {
			t.Fatal(err)
		}
		stores, garbage = append(stores, s), append(garbage, d)
	}
	collected := func() bool {
		for i, s := range stores {
			if missing, err := s.Missing(ctx, garbage[i:i+1]); err != nil || len(missing) == 0 {
				return false
			}
		}
		return true
	}
	o := serveOptions{postgres: url, gc: gcFlags{interval: 20 * time.Millisecond, grace: time.Millisecond}}

	// `cairn gc` while another process leads scans nothing and says so.
	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, postgres.LeaderLockKey); err != nil {
		t.Fatal(err)
	}
	if st, err := runGC(ctx, o, retention.Options{}); err != nil || !st.LeaderBusy || st.RowsScanned != 0 {
		t.Fatalf("cairn gc as a follower = %+v, %v", st, err)
	}
	cmd, _ := gcCmd(t)
	stop, err := startBackgroundGC(ctx, cmd, o, quietLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if collected() {
		t.Fatal("a follower collected")
	}
	// The holder goes away: the server's collector takes over every universe.
	if err := holder.Close(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the background collector deleting the garbage of every universe", collected)
	stop()

	// Stopping released the lock.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, postgres.LeaderLockKey).Scan(&ok); err != nil || !ok {
		t.Fatalf("the leader lock after stop: %v, %v", ok, err)
	}
}
