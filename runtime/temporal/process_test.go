package temporal_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	ctemporal "github.com/cairn-agents/cairn/runtime/temporal"
	"github.com/cairn-agents/cairn/store/postgres"
)

// parallelCalls is how many block calls the model asks for at once: more
// than a small map holds, so map order would differ from run to run.
const parallelCalls = 12

// inputModel answers from the request alone, so a worker process restarted
// mid-run answers as the first one did:
//
//	last user text "parallel", no tool result after it → parallelCalls block calls
//	last user text "slow" → "done" after a second (time to steer)
//	anything else → "done"
//
// It compacts too, into a one-line summary.
type inputModel struct{}

func (inputModel) Generate(ctx context.Context, b blob.Store, req provider.Request) (provider.Output, error) {
	last, results := "", 0
	for _, e := range req.Entries {
		switch {
		case e.Kind == core.EntryMessage && e.Role == core.RoleUser:
			last, results = e.Preview, 0
		case e.Kind == core.EntryToolResult:
			results++
		}
	}
	switch {
	case last == "parallel" && results == 0:
		return parallelOutput(ctx, b)
	case last == "slow":
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return provider.Output{}, ctx.Err()
		}
	}
	return answer(ctx, b, "done")
}

func parallelOutput(ctx context.Context, b blob.Store) (provider.Output, error) {
	var out provider.Output
	for i := range parallelCalls {
		one, err := callTool(ctx, b, fmt.Sprintf("call_%d", i), "block", nil)
		if err != nil {
			return provider.Output{}, err
		}
		out.Entries = append(out.Entries, one.Entries...)
		out.ToolCalls = append(out.ToolCalls, one.ToolCalls...)
	}
	out.Finish = "tool_calls"
	return out, nil
}

func (inputModel) Compact(ctx context.Context, b blob.Store, _ provider.CompactRequest) (provider.CompactOutput, error) {
	ref, err := blob.PutRef(ctx, b, []byte("summary"), content.MediaText, "")
	if err != nil {
		return provider.CompactOutput{}, err
	}
	return provider.CompactOutput{Entries: []core.EntryInput{{Kind: core.EntrySummary, Content: ref, TokenEstimate: provider.Estimate([]byte("summary")), Preview: "summary"}}}, nil
}

// blockTool runs until it is cancelled; started receives each call.
type blockTool struct{ started chan string }

func (blockTool) Definition() provider.Tool {
	return provider.Tool{Name: "block", Description: "block", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (t blockTool) Invoke(ctx context.Context, env runtime.ToolEnv, _ json.RawMessage) (runtime.ToolOutput, error) {
	if t.started != nil {
		t.started <- "started"
	}
	<-ctx.Done()
	return runtime.ToolOutput{}, ctx.Err()
}

// crashStore kills its own process right after it stored an append holding
// an event of kind crashAfter: the worker dies inside the workflow task
// whose local activity made the append, before the task completes.
type crashStore struct {
	*postgres.Store
	crashAfter string
}

func (s crashStore) Append(ctx context.Context, id string, head int64, ps []core.Proposal) ([]core.Event, error) {
	evs, err := s.Store.Append(ctx, id, head, ps)
	for _, p := range ps {
		if err == nil && p.Kind == s.crashAfter {
			fmt.Println("crashing")
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	return evs, err
}

const procWorkerEnv = "CAIRN_TEMPORAL_TEST_WORKER"

// TestWorkerProcess is the worker process of the kill tests (skipped unless
// one of them started it): the session workflow and the activities with
// inputModel and blockTool, until it is killed or its stdin closes. It
// prints "ready" once it polls and "block started" per block call.
func TestWorkerProcess(t *testing.T) {
	if os.Getenv(procWorkerEnv) != "1" {
		return // started only by startProcWorker
	}
	ctx := context.Background()
	db, err := postgres.Connect(ctx, os.Getenv("CAIRN_TEST_WORKER_PG"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pg, err := db.Store(ctx, os.Getenv("CAIRN_TEST_WORKER_UNIVERSE"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var st ctemporal.Store = pg
	if k := os.Getenv("CAIRN_TEST_WORKER_CRASH_AFTER"); k != "" {
		st = crashStore{Store: pg, crashAfter: k}
	}
	c, err := client.Dial(client.Options{HostPort: os.Getenv("CAIRN_TEST_TEMPORAL"), Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	started := make(chan string)
	go func() {
		for range started {
			fmt.Println("block started")
		}
	}()
	tools, err := runtime.NewTools(blockTool{started: started})
	if err != nil {
		t.Fatal(err)
	}
	acts := ctemporal.NewActivities(func(context.Context, string) (ctemporal.Store, error) { return st, nil },
		map[string]provider.Adapter{core.APIChatCompletions: inputModel{}}, tools)
	w := ctemporal.NewWorker(c, os.Getenv("CAIRN_TEST_WORKER_QUEUE"), acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	fmt.Println("ready")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until stdin closes
}

// procWorker is a worker in a process of its own: this test binary running
// TestWorkerProcess.
type procWorker struct {
	cmd   *exec.Cmd
	lines chan string
}

// startProcWorker starts a worker process on queue and waits until it polls.
func startProcWorker(t *testing.T, pgURL, universe, queue, crashAfter string) *procWorker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$", "-test.count=1", "-test.timeout=0")
	cmd.Env = append(os.Environ(), procWorkerEnv+"=1", "CAIRN_TEST_WORKER_PG="+pgURL, "CAIRN_TEST_WORKER_UNIVERSE="+universe,
		"CAIRN_TEST_WORKER_QUEUE="+queue, "CAIRN_TEST_WORKER_CRASH_AFTER="+crashAfter, "CAIRN_TEST_TEMPORAL="+testenv.TemporalAddress(t))
	stderr := &testenv.Buffer{}
	cmd.Stderr = stderr
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &procWorker{cmd: cmd, lines: make(chan string, 64)}
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("worker process %d stderr:\n%s", cmd.Process.Pid, tail(stderr.String(), 4000))
		}
	})
	p.await(t, "ready", 30*time.Second)
	return p
}

// await waits for a line of the worker's stdout.
func (p *procWorker) await(t *testing.T, line string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("worker process ended before %q", line)
			}
			if l == line {
				return
			}
		case <-deadline:
			t.Fatalf("worker process never printed %q", line)
		}
	}
}

// kill ends the worker process with SIGKILL, as a crash would.
func (p *procWorker) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !strings.Contains(err.Error(), "finished") {
		t.Fatal(err)
	}
	for range p.lines { // until its stdout closes
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
