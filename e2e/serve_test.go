package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/internal/testenv"
)

// The binaries under test: cairn itself, and the test-only Temporal worker
// of the crash test (internal/e2eworker: `cairn worker` plus a slow tool).
var cairnBin, workerBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cairn-e2e-")
	if err != nil {
		panic(err)
	}
	cairnBin = filepath.Join(dir, "cairn")
	workerBin = filepath.Join(dir, "e2eworker")
	build := exec.Command("go", "build", "-race", "-o", dir+string(filepath.Separator), "../cmd/cairn", "../internal/e2eworker")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building cairn and e2eworker:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is a running `cairn serve` process.
type server struct {
	cmd    *exec.Cmd
	addr   string
	stderr *testenv.Buffer
}

// writeProviderConfig points provider id "fake" at the fake server.
func writeProviderConfig(t *testing.T, dir string, f *fakeChat) string {
	t.Helper()
	path := filepath.Join(dir, "providers.json")
	cfg := fmt.Sprintf(`{"providers":{"fake":{"baseUrl":%q,"apiKeyEnv":"FAKE_CHAT_KEY"}}}`, f.baseURL())
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startServe starts `cairn serve` on a free port and waits until it listens.
func startServe(t *testing.T, dataDir, configPath, apiKey string) *server {
	t.Helper()
	return startServeWith(t, []string{"--data", dataDir, "--config", configPath}, "FAKE_CHAT_KEY="+apiKey)
}

// startServeWith starts `cairn serve` with extra flags and environment.
func startServeWith(t *testing.T, args []string, env ...string) *server {
	t.Helper()
	return startServeBin(t, cairnBin, args, env...)
}

// startServeBin starts bin's `cairn serve` on a free port and waits until it listens.
func startServeBin(t testing.TB, bin string, args []string, env ...string) *server {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, stderr: &testenv.Buffer{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				lines <- addr
			}
		}
	}()
	select {
	case s.addr = <-lines:
	case <-time.After(60 * time.Second):
		t.Fatalf("cairn serve did not start; stderr:\n%s", s.stderr.String())
	}
	return s
}

func (s *server) client() *api.Client { return api.NewClient(s.addr, nil) }

// kill stops the server with SIGKILL: no shutdown code runs.
func (s *server) kill(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = s.cmd.Wait()
}

// waitRun long-polls until the run reaches a terminal status.
func waitRun(t *testing.T, c *api.Client, sessionID, runID string) api.RunReadResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var after int64
	for {
		r, err := c.ReadRun(ctx, sessionID, runID)
		if err != nil {
			t.Fatalf("reading run: %v", err)
		}
		if r.Status != "queued" && r.Status != "running" {
			return r
		}
		page, err := c.ReadEvents(ctx, api.EventsReadParams{SessionID: sessionID, After: after, WaitMs: 2000})
		if err != nil {
			t.Fatalf("reading events: %v", err)
		}
		after = page.Head
	}
}

// allEvents reads a session's whole log.
func allEvents(t *testing.T, c *api.Client, sessionID string) []api.EventView {
	t.Helper()
	var out []api.EventView
	for {
		page, err := c.ReadEvents(context.Background(), api.EventsReadParams{SessionID: sessionID, After: int64(len(out)), Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Events...)
		if len(page.Events) == 0 || int64(len(out)) >= page.Head {
			return out
		}
	}
}

func kinds(evs []api.EventView) map[string]int {
	n := map[string]int{}
	for _, ev := range evs {
		n[ev.Kind]++
	}
	return n
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runCairn runs a cairn command to completion and returns its stdout.
func runCairn(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(cairnBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("%w: %s", err, stderr.String())
	}
	return stdout.String(), nil
}
