package e2e

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// BenchmarkServeLongChat drives a real `cairn serve` (built without the race
// detector) over JSON-RPC through a long chat of short turns, against an
// in-process zero-latency Chat Completions fake, and reports the server's
// own CPU time per turn, read from /proc, at turns 10, 100, 1,000 (and
// 10,000 when that many are run), the bytes its data directory holds after
// the server stops, and the latency of session/read and
// session/context/read after 10 turns and at the end. The turn count is
// CAIRN_BENCH_TURNS (1000); run it once:
//
//	go test -run '^$' -bench ServeLongChat -benchtime 1x ./e2e/
func BenchmarkServeLongChat(b *testing.B) {
	turns := 1000
	if v := os.Getenv("CAIRN_BENCH_TURNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 {
			b.Fatalf("CAIRN_BENCH_TURNS=%q: want a number of at least 10", v)
		}
		turns = n
	}
	bin := filepath.Join(b.TempDir(), "cairn")
	build := exec.Command("go", "build", "-o", bin, "../cmd/cairn")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		b.Fatal(err)
	}
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, textResponse("chatcmpl-bench", "Noted."))
	}))
	b.Cleanup(fake.Close)
	dir := b.TempDir()
	cfg := filepath.Join(dir, "providers.json")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"providers":{"fake":{"baseUrl":%q}}}`, fake.URL+"/v1"), 0o600); err != nil {
		b.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	for range b.N {
		_ = os.RemoveAll(data)
		srv := startServeBin(b, bin, []string{"--data", data, "--config", cfg, "--gc-interval", "0"})
		c := srv.client()
		ctx := context.Background()
		s, err := c.CreateSession(ctx, api.CreateSessionParams{Model: core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "m"}})
		if err != nil {
			b.Fatal(err)
		}
		marks := map[int]float64{}
		var head int64
		var readsEarly [2]float64
		before := serverCPU(b, srv)
		for turn := 1; turn <= turns; turn++ {
			run, err := c.StartRun(ctx, api.RunStartParams{SessionID: s.SessionID, Input: []api.InputPart{{Type: "text", Text: fmt.Sprintf("Turn %d: a short message, as people write them.", turn)}}})
			if err != nil {
				b.Fatal(err)
			}
			waitCompleted(b, c, s.SessionID, run.RunID, &head)
			// CPU per turn at a mark: the mean over the ten turns ending there
			// (the /proc clock ticks every 10 ms).
			if turn%10 == 0 {
				now := serverCPU(b, srv)
				if t := turn; t == 10 || t == 100 || t == 1000 || t == 10000 {
					marks[t] = (now - before).Seconds() * 1000 / 10
				}
				if turn == 10 {
					readsEarly = readLatency(b, c, s.SessionID)
				}
				before = serverCPU(b, srv) // the reads' CPU is not a turn's
			}
		}
		readsLate := readLatency(b, c, s.SessionID)
		stopServer(b, srv)
		for _, t := range []int{10, 100, 1000, 10000} {
			if v, ok := marks[t]; ok {
				b.ReportMetric(v, fmt.Sprintf("cpu-ms/turn@%d", t))
			}
		}
		b.ReportMetric(float64(dirBytes(b, data))/1e6, "stored-MB")
		b.ReportMetric(readsEarly[0], "session/read-ms@10turns")
		b.ReportMetric(readsLate[0], "session/read-ms@end")
		b.ReportMetric(readsEarly[1], "context/read-ms@10turns")
		b.ReportMetric(readsLate[1], "context/read-ms@end")
		b.Logf("%d turns, %d events", turns, head)
	}
}

// readLatency is the mean wall time of session/read and of
// session/context/read (its first page), over 20 calls each.
func readLatency(b *testing.B, c *api.Client, sessionID string) [2]float64 {
	b.Helper()
	const n = 20
	ctx := context.Background()
	var out [2]float64
	for i, read := range []func() error{
		func() error { _, err := c.ReadSession(ctx, sessionID); return err },
		func() error { _, err := c.ReadContextPage(ctx, api.ContextReadParams{SessionID: sessionID}); return err },
	} {
		start := time.Now()
		for range n {
			if err := read(); err != nil {
				b.Fatal(err)
			}
		}
		out[i] = float64(time.Since(start).Microseconds()) / 1000 / n
	}
	return out
}

// stopServer stops the server as a user does (SIGTERM), so what remains
// in its data directory is what it keeps.
func stopServer(b *testing.B, s *server) {
	b.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.kill(b)
		b.Fatal("cairn serve did not stop within 30 s of SIGTERM")
	}
}

// waitCompleted long-polls the session's events after *head until the run
// ends, as a client following a session would; it moves *head on.
func waitCompleted(b *testing.B, c *api.Client, sessionID, runID string, head *int64) {
	b.Helper()
	join := "run:" + runID
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		got, err := c.ReadEvents(context.Background(), api.EventsReadParams{SessionID: sessionID, After: *head, WaitMs: 5000})
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range got.Events {
			*head = ev.Seq
			if !slices.Contains(ev.Joins, join) {
				continue
			}
			switch ev.Kind {
			case core.KindRunCompleted:
				return
			case core.KindRunFailed, core.KindRunCancelled:
				b.Fatalf("run %s: %s %s", runID, ev.Kind, ev.Payload)
			}
		}
	}
	b.Fatalf("run %s did not end", runID)
}

// serverCPU is the server process's user plus system CPU time so far.
func serverCPU(b *testing.B, s *server) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		b.Fatalf("reading the server's CPU time (Linux /proc): %v", err)
	}
	// Fields after the command name, which is in parentheses: utime and
	// stime are the 12th and 13th of them, in clock ticks (100 a second).
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("parsing /proc stat: %v %v", err1, err2)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// dirBytes is the size of the files under dir.
func dirBytes(b *testing.B, dir string) int64 {
	b.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
