package e2e

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/internal/testenv"
)

// backing is where a benchmark's server keeps what it stores and runs its
// sessions: a data directory (the embedded store); a PostgreSQL database
// (hosted mode, where every request carries its universe's key); or that
// database with sessions on Temporal, run by one `cairn worker`.
type backing struct {
	data string // embedded: the data directory

	postgres string   // hosted: the database's URL
	env      []string // hosted: CAIRN_POSTGRES for the server
	key      string   // hosted: the universe's API key
	base     int64    // hosted: the database's size before the run

	temporal, queue string // on Temporal: its address, and a task queue of the run's own
	worker          *proc
}

// hostedBacking is a fresh database, migrated, with one universe, as a
// user sets one up: `cairn migrate`, then `cairn universe create`; on
// Temporal too when onTemporal.
func hostedBacking(b *testing.B, bin string, onTemporal bool) *backing {
	b.Helper()
	url := testenv.PostgresURL(b)
	w := &backing{postgres: url, env: []string{"CAIRN_POSTGRES=" + url}}
	if onTemporal {
		w.temporal, w.queue = testenv.TemporalAddress(b), "bench-"+randomHex(6)
	}
	w.cairn(b, bin, "migrate")
	out := w.cairn(b, bin, "universe", "create", "bench")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	w.key = lines[len(lines)-1] // the key is printed alone on the last line
	w.base = databaseBytes(b, url)
	return w
}

// cairn runs bin with args and the backing's environment, and returns its
// standard output.
func (w *backing) cairn(b *testing.B, bin string, args ...string) string {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(cmd.Environ(), w.env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("cairn %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// serve starts bin's `cairn serve` on this backing with the provider
// config file, and on Temporal its worker, once.
func (w *backing) serve(b *testing.B, bin, config string) *server {
	b.Helper()
	args := []string{"--config", config, "--gc-interval", "0"}
	switch {
	case w.postgres == "":
		args = append(args, "--data", w.data)
	case w.temporal != "":
		onQueue := []string{"--temporal", w.temporal, "--task-queue", w.queue}
		args = append(args, onQueue...)
		if w.worker == nil {
			w.worker = startProc(b, "worker", bin, append([]string{"worker", "--config", config}, onQueue...), w.env, "worker polling "+w.queue)
		}
	}
	return startServeBin(b, bin, args, w.env...)
}

// stopWorker stops the worker, if there is one, as a user does (SIGTERM),
// so that it writes what CAIRN_CPU_PROFILE asks of it.
func (w *backing) stopWorker(b *testing.B) {
	b.Helper()
	if w.worker == nil {
		return
	}
	if err := w.worker.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.worker.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		b.Fatal("cairn worker did not stop within 30 s of SIGTERM")
	}
	w.worker = nil
}

// cpu is the CPU time so far of Cairn's processes: the server s, and the
// worker on Temporal.
func (w *backing) cpu(b *testing.B, s *server) time.Duration {
	t := processCPU(b, s.cmd.Process.Pid)
	if w.worker != nil {
		t += processCPU(b, w.worker.cmd.Process.Pid)
	}
	return t
}

// client is a client of s that sends the key, if the backing has one.
func (w *backing) client(s *server) *api.Client {
	if w.key == "" {
		return s.client()
	}
	return s.client().WithAPIKey(w.key)
}

// bytes is what the run stored: the data directory's files, or what the
// database grew by.
func (w *backing) bytes(b *testing.B) int64 {
	if w.postgres == "" {
		return dirBytes(b, w.data)
	}
	return databaseBytes(b, w.postgres) - w.base
}

// databaseBytes is pg_database_size of the database at url.
func databaseBytes(b *testing.B, url string) int64 {
	b.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}
