package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
)

// BenchmarkArchiveMove moves a session of CAIRN_BENCH_TURNS turns (1,000)
// linked to CAIRN_BENCH_ARCHIVE_MB of workspace files (1,024, in two
// workspaces of 8 MiB files) from one `cairn serve --data` to another with
// `cairn export` and `cairn import`, as a user would, and reports each
// side's throughput (the blob and event bytes moved per second of wall
// time) and the peak RSS of the server and of the CLI on each side (the
// server restarted before the export, so its peak is the export's). It
// then imports the archive again and reports the blob bytes that second
// import sent (0: the server had them all). Run it with -benchtime 1x:
//
//	go test -run '^$' -bench ArchiveMove -benchtime 1x -timeout 30m ./e2e/
func BenchmarkArchiveMove(b *testing.B) {
	turns := benchTurns(b)
	mb := 1024
	if v := os.Getenv("CAIRN_BENCH_ARCHIVE_MB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 16 {
			b.Fatalf("CAIRN_BENCH_ARCHIVE_MB=%q: want a number of at least 16", v)
		}
		mb = n
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "cairn")
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
	cfg := filepath.Join(dir, "providers.json")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"providers":{"fake":{"baseUrl":%q,"stream":false}}}`, fake.URL+"/v1"), 0o600); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		from := filepath.Join(dir, "from")
		_ = os.RemoveAll(from)
		src := startServeBin(b, bin, []string{"--data", from, "--config", cfg, "--gc-interval", "0"})
		// Two workspaces of incompressible 8 MiB files: the archive's
		// compression buys nothing, the worst case for its throughput.
		rng := rand.New(rand.NewChaCha8([32]byte{1}))
		var links []api.LinkParam
		for w, left := 0, mb<<20; left > 0; w++ {
			files := filepath.Join(dir, fmt.Sprintf("files-%d", w))
			_ = os.RemoveAll(files)
			if err := os.MkdirAll(files, 0o755); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < 64 && left > 0; i++ { // 512 MiB: a workspace's default bound
				data := make([]byte, min(8<<20, left))
				for j := 0; j < len(data); j += 8 {
					v := rng.Uint64()
					for k := 0; k < 8 && j+k < len(data); k++ {
						data[j+k] = byte(v >> (8 * k))
					}
				}
				if err := os.WriteFile(filepath.Join(files, fmt.Sprintf("part-%03d.bin", i)), data, 0o644); err != nil {
					b.Fatal(err)
				}
				left -= len(data)
			}
			name := fmt.Sprintf("data-%d", w)
			if out, err := exec.Command(bin, "vfs", "import", files, "--workspace", name, "--addr", src.addr).CombinedOutput(); err != nil {
				b.Fatalf("vfs import: %v\n%s", err, out)
			}
			_ = os.RemoveAll(files)
			links = append(links, api.LinkParam{Mount: "/" + name, Workspace: name})
		}
		c := src.client()
		ctx := context.Background()
		created, err := c.CreateSession(ctx, api.CreateSessionParams{Model: fakeModel(), Instructions: "Be brief.", Links: links})
		if err != nil {
			b.Fatal(err)
		}
		sid := created.SessionID
		var head int64
		for i := range turns {
			run, err := c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: textInput(fmt.Sprintf("Note %d: the sync feature ships.", i))})
			if err != nil {
				b.Fatal(err)
			}
			waitCompleted(b, c, sid, run.RunID, &head)
		}
		stopServer(b, src)
		src = startServeBin(b, bin, []string{"--data", from, "--config", cfg, "--gc-interval", "0"})

		b.ResetTimer()
		file := filepath.Join(dir, "move.cairn")
		exported := runTimed(b, bin, "export", "--addr", src.addr, "--out", file, "--session", sid)
		exportServerRSS := peakRSS(b, src)
		to := startServeBin(b, bin, []string{"--data", filepath.Join(dir, "to"), "--config", cfg, "--gc-interval", "0"})
		imported := runTimed(b, bin, "import", file, "--json", "--addr", to.addr)
		importServerRSS := peakRSS(b, to)
		var res api.ImportResult
		if err := json.Unmarshal([]byte(imported.out), &res); err != nil {
			b.Fatalf("import --json: %v\n%s", err, imported.out)
		}
		again := runTimed(b, bin, "import", file, "--json", "--new-ids", "--addr", to.addr)
		var second api.ImportResult
		if err := json.Unmarshal([]byte(again.out), &second); err != nil {
			b.Fatalf("second import --json: %v\n%s", err, again.out)
		}
		b.StopTimer()

		info, err := os.Stat(file)
		if err != nil {
			b.Fatal(err)
		}
		moved := float64(res.Bytes) // the blob bytes sent; the events are a few MB beside them
		const mib = 1 << 20
		b.ReportMetric(moved/mib/exported.wall.Seconds(), "export-MiB/s")
		b.ReportMetric(moved/mib/imported.wall.Seconds(), "import-MiB/s")
		b.ReportMetric(float64(exportServerRSS)/mib, "export-server-peak-RSS-MiB")
		b.ReportMetric(float64(exported.maxRSS)/mib, "export-cli-peak-RSS-MiB")
		b.ReportMetric(float64(importServerRSS)/mib, "import-server-peak-RSS-MiB")
		b.ReportMetric(float64(imported.maxRSS)/mib, "import-cli-peak-RSS-MiB")
		b.ReportMetric(float64(info.Size())/mib, "archive-MiB")
		b.ReportMetric(float64(head), "events")
		b.ReportMetric(float64(second.Bytes), "second-import-blob-bytes")
		b.ReportMetric(again.wall.Seconds(), "second-import-s")
		if second.Bytes != 0 || second.Blobs != 0 {
			b.Errorf("the second import sent %d blobs (%d bytes)", second.Blobs, second.Bytes)
		}
	}
}

// timed is a CLI run: its stdout, wall time and peak RSS.
type timed struct {
	out    string
	wall   time.Duration
	maxRSS int64
}

func runTimed(b *testing.B, bin string, args ...string) timed {
	b.Helper()
	cmd := exec.Command(bin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("cairn %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	wall := time.Since(start)
	return timed{out: stdout.String(), wall: wall, maxRSS: cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss * 1024}
}

// peakRSS is the server process's peak resident set so far (VmHWM).
func peakRSS(b *testing.B, s *server) int64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		b.Fatalf("reading the server's memory (Linux /proc): %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb * 1024
		}
	}
	b.Fatal("no VmHWM in /proc status")
	return 0
}
