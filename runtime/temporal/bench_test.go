package temporal_test

// Benchmarks of the Temporal host against a real deployment. They need the
// services ./scripts/test starts (PostgreSQL, the Temporal dev server) and
// run only with -bench, e.g.
//
//	go test -run '^$' -bench . -benchtime 1x ./runtime/temporal/
//
// BenchmarkHistoryBytesPerTurn reports the workflow history bytes per turn
// of one scripted session (three runs, each a tool round and an answer: six
// turns) with 1 KiB and with 1 MiB tool outputs, for the session workflow and
// for two deliberately naive designs that pass bytes through activities.
// BenchmarkIdleSessionsPerWorker keeps 1,000 idle sessions on one worker
// process and reports that process's memory.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/provider"
	cruntime "github.com/cairn-agents/cairn/runtime"
	ctemporal "github.com/cairn-agents/cairn/runtime/temporal"
	"github.com/cairn-agents/cairn/store/postgres"
)

// BenchmarkHistoryBytesPerTurn: one op is the scripted session run twice,
// with 1 KiB and with 1 MiB tool outputs. Bytes per turn are read back from
// the Temporal server: (history after the runs − history before them) / turns,
// so the fixed cost of starting the workflow (and rehydrating) is not counted.
func BenchmarkHistoryBytesPerTurn(b *testing.B) {
	var thin [2]float64 // bytes per turn of the session workflow: 1 KiB, 1 MiB
	b.Run("design=thin", func(b *testing.B) {
		d := newMeasureDeployment(b)
		var small, large historyMeasurement
		for i := 0; i < b.N; i++ {
			small = d.measure(b, 1<<10, measureRuns)
			large = d.measure(b, 1<<20, measureRuns)
		}
		thin = [2]float64{small.bytesPerTurn(), large.bytesPerTurn()}
		reportHistory(b, small, large)
		b.Logf("1 KiB tool outputs, per turn:\n%s", small.breakdown.table(small.turns))
		b.Logf("1 MiB tool outputs, per turn:\n%s", large.breakdown.table(large.turns))
	})
	for _, mode := range []naiveMode{naiveOutput, naiveContext} {
		b.Run("design="+string(mode), func(b *testing.B) {
			nd := newNaiveDeployment(b)
			var small, large historyMeasurement
			for i := 0; i < b.N; i++ {
				small = nd.measure(b, mode, 1<<10, measureRuns)
				large = nd.measure(b, mode, 1<<20, measureRuns)
			}
			reportHistory(b, small, large)
			if thin[0] > 0 {
				b.ReportMetric(small.bytesPerTurn()/thin[0], "x-thin@1KiB")
				b.ReportMetric(large.bytesPerTurn()/thin[1], "x-thin@1MiB")
			}
			for _, m := range []historyMeasurement{small, large} {
				if m.failure != "" {
					b.Logf("%s tool outputs: the session stopped after %d of %d turns: %s", sizeName(m.outputBytes), m.turns, 2*m.runs, m.failure)
				}
			}
		})
	}
}

func reportHistory(b *testing.B, small, large historyMeasurement) {
	b.ReportMetric(small.bytesPerTurn(), "B/turn@1KiB")
	b.ReportMetric(large.bytesPerTurn(), "B/turn@1MiB")
	b.ReportMetric(large.bytesPerTurn()/small.bytesPerTurn(), "1MiB/1KiB")
	b.ReportMetric(small.eventsPerTurn(), "events/turn")
	b.ReportMetric(float64(large.turns), "turns@1MiB")
}

// naiveMode is a deliberately naive design of the same session, for
// comparison only.
type naiveMode string

const (
	// naiveOutput: the tool activity returns the output bytes and the
	// workflow hands them to an append activity to store; the model activity
	// gets ids only.
	naiveOutput naiveMode = "naive-output"
	// naiveContext: as naiveOutput, and the model activity also gets the whole
	// conversation as its input and returns the message it generated.
	naiveContext naiveMode = "naive-context"
)

const naiveWorkflowName = "bench.naive_session"

type naiveArgs struct {
	Mode        naiveMode `json:"mode"`
	Runs        int       `json:"runs"`
	OutputBytes int       `json:"outputBytes"`
}

// naiveMessage is a conversation message with its bytes.
type naiveMessage struct {
	Role   string `json:"role"`
	Text   string `json:"text,omitempty"`
	CallID string `json:"callId,omitempty"`
	Tool   string `json:"tool,omitempty"`
}

type naiveGenerateIn struct {
	SessionID    string         `json:"sessionId"`
	Turn         int            `json:"turn"`
	Conversation []naiveMessage `json:"conversation,omitempty"`
}

type naiveToolIn struct {
	SessionID   string `json:"sessionId"`
	CallID      string `json:"callId"`
	OutputBytes int    `json:"outputBytes"`
}

type naiveAppendIn struct {
	SessionID string         `json:"sessionId"`
	Messages  []naiveMessage `json:"messages"`
}

// naiveSessionWorkflow plays the scripted session (runs of a tool round and
// an answer) the naive way and returns the number of turns it completed.
func naiveSessionWorkflow(ctx workflow.Context, args naiveArgs) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	session := workflow.GetInfo(ctx).WorkflowExecution.ID
	var conversation []naiveMessage
	turns := 0
	add := func(m naiveMessage) error {
		conversation = append(conversation, m)
		return workflow.ExecuteActivity(ctx, "NaiveAppend", naiveAppendIn{SessionID: session, Messages: []naiveMessage{m}}).Get(ctx, nil)
	}
	generate := func() (naiveMessage, error) {
		in := naiveGenerateIn{SessionID: session, Turn: turns}
		if args.Mode == naiveContext {
			in.Conversation = conversation
		}
		var out naiveMessage
		if err := workflow.ExecuteActivity(ctx, "NaiveGenerate", in).Get(ctx, &out); err != nil {
			return out, err
		}
		turns++
		return out, add(out)
	}
	for r := 0; r < args.Runs; r++ {
		if err := add(naiveMessage{Role: "user", Text: fmt.Sprintf("run %d: read the dump", r)}); err != nil {
			return turns, err
		}
		call, err := generate()
		if err != nil {
			return turns, err
		}
		var output string
		if err := workflow.ExecuteActivity(ctx, "NaiveTool", naiveToolIn{SessionID: session, CallID: call.CallID, OutputBytes: args.OutputBytes}).Get(ctx, &output); err != nil {
			return turns, err
		}
		if err := add(naiveMessage{Role: "tool", CallID: call.CallID, Text: output}); err != nil {
			return turns, err
		}
		if _, err := generate(); err != nil {
			return turns, err
		}
	}
	return turns, nil
}

// naiveActivities answer like the scripted model and tool; appends are
// dropped (a naive host would write them to its store).
type naiveActivities struct{ calls atomic.Int64 }

func (a *naiveActivities) NaiveGenerate(_ context.Context, in naiveGenerateIn) (naiveMessage, error) {
	if in.Turn%2 == 0 {
		return naiveMessage{Role: "assistant", CallID: fmt.Sprintf("call_%d", in.Turn), Tool: "dump", Text: "{}"}, nil
	}
	return naiveMessage{Role: "assistant", Text: "done"}, nil
}

func (a *naiveActivities) NaiveTool(_ context.Context, in naiveToolIn) (string, error) {
	return string(textOfSize(in.OutputBytes, a.calls.Add(1))), nil
}

func (a *naiveActivities) NaiveAppend(context.Context, naiveAppendIn) error { return nil }

// naiveDeployment runs the naive workflow on a worker of its own queue.
type naiveDeployment struct {
	client client.Client
	queue  string
}

func newNaiveDeployment(tb testing.TB) *naiveDeployment {
	tb.Helper()
	c := dialTemporal(tb)
	queue := cruntime.RandomID("naive-")
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(naiveSessionWorkflow, workflow.RegisterOptions{Name: naiveWorkflowName})
	w.RegisterActivity(&naiveActivities{})
	if err := w.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(w.Stop)
	return &naiveDeployment{client: c, queue: queue}
}

// measure runs the naive session with no runs and with `runs` runs and
// divides the difference of their histories by the turns completed. A
// session the server stops (a payload over its limit) is measured up to
// there, and the failure is returned with it.
func (nd *naiveDeployment) measure(tb testing.TB, mode naiveMode, outputBytes, runs int) historyMeasurement {
	tb.Helper()
	m := historyMeasurement{outputBytes: outputBytes, runs: runs}
	m.base, _, _ = nd.run(tb, naiveArgs{Mode: mode, Runs: 0, OutputBytes: outputBytes})
	m.after, m.turns, m.failure = nd.run(tb, naiveArgs{Mode: mode, Runs: runs, OutputBytes: outputBytes})
	if m.turns == 0 {
		tb.Fatalf("naive session %s with %s outputs completed no turn: %s", mode, sizeName(outputBytes), m.failure)
	}
	return m
}

func (nd *naiveDeployment) run(tb testing.TB, args naiveArgs) (historyPoint, int, string) {
	tb.Helper()
	ctx := context.Background()
	run, err := nd.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: cruntime.RandomID("naive-"), TaskQueue: nd.queue, WorkflowExecutionTimeout: 2 * time.Minute,
	}, naiveWorkflowName, args)
	if err != nil {
		tb.Fatal(err)
	}
	var turns int
	failure := ""
	if err := run.Get(ctx, &turns); err != nil {
		failure = err.Error()
	}
	p := waitQuiescent(tb, nd.client, run.GetID())
	// The turns completed, from the history (a failed run returns no result).
	b := historyBreakdown(tb, nd.client, run.GetID(), 0)
	if r := b.rows["ActivityTaskCompleted NaiveGenerate"]; r != nil {
		turns = r.events
	}
	return p, turns, failure
}

// BenchmarkIdleSessionsPerWorker creates 1,000 sessions through the gateway
// (each starts its workflow, which rehydrates, appends the session's opening
// and idles) on one worker, run as a separate process (this test binary,
// TestBenchWorkerProcess), and reports that process's memory: VmRSS before
// and after, its peak, and the Go heap in use after a GC.
func BenchmarkIdleSessionsPerWorker(b *testing.B) {
	const sessions, concurrency = 1000, 32
	_, st, universe, url := hostedStore(b, false)
	c := dialTemporal(b)
	queue := cruntime.RandomID("q-")
	wp := startWorkerProcess(b, url, universe, queue)
	gw := ctemporal.NewGateway(c, queue, universe, st, ctemporal.SessionArgs{})
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "test", APIKind: core.APIChatCompletions, Model: "m"}}

	time.Sleep(time.Second)
	before := wp.stats(b)
	b.ResetTimer()
	start := time.Now()
	var ids []string
	for i := 0; i < b.N; i++ {
		batch := make([]string, sessions)
		for j := range batch {
			batch[j] = fmt.Sprintf("s%d-%d", i, j)
		}
		forEach(b, batch, concurrency, func(id string) error {
			_, err := gw.CreateSession(context.Background(), id, cfg, nil)
			return err
		})
		ids = append(ids, batch...)
	}
	created := time.Since(start)
	b.StopTimer()
	mid := wp.stats(b) // the worker's CPU for the creations, before the queries below
	b.Cleanup(func() { terminateSessions(c, universe, ids, concurrency) })
	// Every session is live on the worker: its status query answers.
	forEach(b, ids, concurrency, func(id string) error {
		s, err := gw.Status(context.Background(), id)
		if err == nil && s.SessionID != id {
			err = fmt.Errorf("status of %s names %q", id, s.SessionID)
		}
		return err
	})
	time.Sleep(2 * time.Second)
	after := wp.stats(b)
	n := float64(len(ids))
	b.ReportMetric(n, "sessions")
	b.ReportMetric(n/created.Seconds(), "sessions/s")
	b.ReportMetric(float64(before.RSS)/(1<<20), "RSS-before-MiB")
	b.ReportMetric(float64(after.RSS)/(1<<20), "RSS-after-MiB")
	b.ReportMetric(float64(after.HWM)/(1<<20), "RSS-peak-MiB")
	b.ReportMetric(float64(after.RSS-before.RSS)/n/1024, "RSS-KiB/session")
	b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/n/1024, "heap-inuse-KiB/session")
	b.ReportMetric((float64(after.HeapAlloc)-float64(before.HeapAlloc))/n/1024, "live-heap-KiB/session")
	b.ReportMetric(float64(after.Goroutines-before.Goroutines)/n, "goroutines/session")
	b.ReportMetric(float64((mid.CPU-before.CPU).Milliseconds())/n, "worker-CPU-ms/session")
	b.Logf("worker process before: %+v", before)
	b.Logf("worker process after %d idle sessions (created in %s): %+v", len(ids), created.Round(time.Millisecond), after)
}

// forEach calls fn on every item, at most n at a time, and fails on the
// first error.
func forEach(tb testing.TB, items []string, n int, fn func(string) error) {
	tb.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	work := make(chan string)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				if err := fn(it); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("%s: %w", it, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, it := range items {
		work <- it
	}
	close(work)
	wg.Wait()
	if first != nil {
		tb.Fatal(first)
	}
}

// terminateSessions ends the benchmark's workflows, so they do not linger in
// the dev server for the tests that follow.
func terminateSessions(c client.Client, universe string, ids []string, n int) {
	work := make(chan string)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				_ = c.TerminateWorkflow(context.Background(), ctemporal.WorkflowID(universe, id), "", "benchmark done")
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
}

// workerStats is what the worker process reports of itself.
type workerStats struct {
	RSS, HWM   int64         // VmRSS, VmHWM (bytes)
	CPU        time.Duration // user + system time so far
	HeapInuse  uint64
	HeapAlloc  uint64
	Sys        uint64
	Goroutines int
}

type workerProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

const workerProcessEnv = "CAIRN_BENCH_WORKER_PROCESS"

// startWorkerProcess runs TestBenchWorkerProcess of this test binary as the
// worker: the session workflow and the activities on PostgreSQL, as
// `cairn worker` runs them.
func startWorkerProcess(tb testing.TB, pgURL, universe, queue string) *workerProcess {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchWorkerProcess$", "-test.count=1", "-test.timeout=0")
	cmd.Env = append(os.Environ(), workerProcessEnv+"=1", "CAIRN_BENCH_PG="+pgURL,
		"CAIRN_BENCH_UNIVERSE="+universe, "CAIRN_BENCH_QUEUE="+queue, "CAIRN_TEST_TEMPORAL="+testenv.TemporalAddress(tb))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	wp := &workerProcess{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	tb.Cleanup(func() {
		stdin.Close() // the worker stops at EOF
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	for wp.out.Scan() {
		if wp.out.Text() == "ready" {
			return wp
		}
	}
	tb.Fatalf("worker process exited before it was ready: %v", wp.out.Err())
	return nil
}

// stats asks the worker process for its memory figures.
func (wp *workerProcess) stats(tb testing.TB) workerStats {
	tb.Helper()
	if _, err := io.WriteString(wp.stdin, "stats\n"); err != nil {
		tb.Fatal(err)
	}
	for wp.out.Scan() {
		line, ok := strings.CutPrefix(wp.out.Text(), "stats ")
		if !ok {
			continue
		}
		var s workerStats
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			tb.Fatal(err)
		}
		s.RSS, s.HWM = procStatus(tb, wp.cmd.Process.Pid, "VmRSS"), procStatus(tb, wp.cmd.Process.Pid, "VmHWM")
		s.CPU = procCPU(tb, wp.cmd.Process.Pid)
		return s
	}
	tb.Fatalf("worker process gone: %v", wp.out.Err())
	return workerStats{}
}

// procStatus reads a size field (kB) of /proc/PID/status, in bytes.
func procStatus(tb testing.TB, pid int, field string) int64 {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// procCPU is a process's user + system time from /proc/PID/stat (fields 14
// and 15, in clock ticks of 1/100 s on Linux).
func procCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// Fields after the command name, which is in parentheses: state is field 3.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("parsing /proc/%d/stat: %v %v", pid, err1, err2)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// TestBenchWorkerProcess is the worker process of
// BenchmarkIdleSessionsPerWorker; it is skipped unless that benchmark
// started it. It runs the worker until its stdin closes and answers "stats"
// lines with its Go memory figures.
func TestBenchWorkerProcess(t *testing.T) {
	if os.Getenv(workerProcessEnv) != "1" {
		return // the worker process of BenchmarkIdleSessionsPerWorker, started only by it
	}
	ctx := context.Background()
	db, err := postgres.Connect(ctx, os.Getenv("CAIRN_BENCH_PG"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := db.Store(ctx, os.Getenv("CAIRN_BENCH_UNIVERSE"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: os.Getenv("CAIRN_TEST_TEMPORAL"), Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tools, err := cruntime.NewTools()
	if err != nil {
		t.Fatal(err)
	}
	acts := ctemporal.NewActivities(func(context.Context, string) (ctemporal.Store, error) { return st, nil },
		map[string]provider.Adapter{}, tools)
	w := ctemporal.NewWorker(c, os.Getenv("CAIRN_BENCH_QUEUE"), acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() != "stats" {
			continue
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		raw, _ := json.Marshal(workerStats{HeapInuse: ms.HeapInuse, HeapAlloc: ms.HeapAlloc, Sys: ms.Sys, Goroutines: runtime.NumGoroutine()})
		fmt.Println("stats " + string(raw))
	}
}
