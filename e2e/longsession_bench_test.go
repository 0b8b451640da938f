package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/sse"
	"github.com/cairn-agents/cairn/vfs"
)

// The end-to-end benchmarks of a long session (issue 17): each builds a
// cairn binary without the race detector, runs `cairn serve --data DIR`
// against an in-process zero-latency Chat Completions fake, drives a
// scripted session over JSON-RPC as a client would (starting runs and
// long-polling their events), and reports the server's own CPU time per
// turn (a turn is one run here; on Temporal, the worker's is added), read
// from /proc, and the time a turn takes, at turns 10, 100, 1,000 and
// 10,000 as far as the scenario goes (see perTurnAt); its resident memory
// after the last turn; the bytes its data directory holds once the server
// has stopped (or its database grew by, see backing); the latency of
// session/read and of one page of session/context/read after 10 turns and
// at the end; of the first session/read after a restart (cold); and the
// wall and CPU time of the first turn after another restart.
// CAIRN_BENCH_KEEP=DIR keeps the data directory of an embedded run (DIR
// must not exist);
// CAIRN_BENCH_BIN=FILE runs that cairn binary instead of building one. Run
// one with -benchtime 1x, e.g.
//
//	go test -run '^$' -bench ServeLongChat -benchtime 1x -timeout 60m ./e2e/

// BenchmarkServeLongChat is a long chat of short turns without tools:
// CAIRN_BENCH_TURNS of them (1,000).
func BenchmarkServeLongChat(b *testing.B) {
	runScenario(b, scenario{turns: benchTurns(b), respond: func([]byte) string { return textResponse("chatcmpl-bench", "Noted.") }})
}

// BenchmarkServeLongChatStreamed is BenchmarkServeLongChat with the
// answers streamed: what streaming costs the server per turn.
// (BenchmarkServeLongChat's provider record says "stream": false.)
func BenchmarkServeLongChatStreamed(b *testing.B) {
	runScenario(b, scenario{turns: benchTurns(b), stream: true, respond: func([]byte) string { return textResponse("chatcmpl-bench", "Noted, in a few words.") }})
}

// BenchmarkServeLongKinds is the long chat on the other API kinds, whole
// and streamed: Anthropic Messages, whose streamed message is rebuilt
// from its block events, and Responses, whose stream ends with the
// response.
func BenchmarkServeLongKinds(b *testing.B) {
	answers := map[string]string{
		core.APIAnthropicMessages: `{"id":"msg_bench","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Noted, in a few words."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":6}}`,
		core.APIOpenAIResponses:   `{"id":"resp_bench","object":"response","created_at":1,"status":"completed","model":"m","output":[{"id":"msg_bench","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Noted, in a few words.","annotations":[]}]}],"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":6,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":16}}`,
	}
	for _, kind := range []string{core.APIAnthropicMessages, core.APIOpenAIResponses} {
		for _, stream := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/stream=%t", kind, stream), func(b *testing.B) {
				runScenario(b, scenario{turns: benchTurns(b), apiKind: kind, stream: stream, respond: func([]byte) string { return answers[kind] }})
			})
		}
	}
}

// BenchmarkServeLongChatCompacted is BenchmarkServeLongChat with the
// compaction a session that lives for months runs with: the model
// summarizes the conversation whenever it reaches 4,000 estimated tokens
// (about every 100 turns here), so the context, and each request, stay
// bounded while the history grows.
func BenchmarkServeLongChatCompacted(b *testing.B) {
	runScenario(b, scenario{turns: benchTurns(b), respond: func([]byte) string { return textResponse("chatcmpl-bench", "Noted.") },
		compaction: &core.Compaction{Mode: core.CompactionProviderStandalone, ThresholdTokens: 4000, TargetTokens: 500}})
}

// BenchmarkServeLongChatPostgres is BenchmarkServeLongChat on the hosted
// store: `cairn serve --postgres URL` (a fresh database, migrated, with one
// universe whose key the client sends). "stored-MB" is then what the
// database grew by over the run.
func BenchmarkServeLongChatPostgres(b *testing.B) {
	runScenario(b, scenario{turns: benchTurns(b), postgres: true, respond: func([]byte) string { return textResponse("chatcmpl-bench", "Noted.") }})
}

// BenchmarkServeLongChatTemporal is BenchmarkServeLongChatPostgres with
// the session on Temporal: `cairn serve --temporal` as the gateway and
// one `cairn worker`. The CPU is the gateway's and the worker's together;
// the Temporal server's own is not counted.
func BenchmarkServeLongChatTemporal(b *testing.B) {
	runScenario(b, scenario{turns: benchTurns(b), temporal: true, respond: func([]byte) string { return textResponse("chatcmpl-bench", "Noted.") }})
}

// benchTurns is CAIRN_BENCH_TURNS (at least 10), or 1,000.
func benchTurns(b *testing.B) int { return benchCount(b, "CAIRN_BENCH_TURNS", 1000, 10) }

// benchCount is the number the environment variable name gives (at least
// least), or def.
func benchCount(b *testing.B, name string, def, least int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		b.Fatalf("%s=%q: want a number of at least %d", name, v, least)
	}
	return n
}

// BenchmarkServeReread is 100 turns that each read one 256 KiB file of a
// linked workspace through vfs_read_file and then answer, so request N
// carries N copies of the file.
func BenchmarkServeReread(b *testing.B) {
	line := strings.Repeat("x", 63) + "\n"
	file := strings.Repeat(line, vfs.MaxReadBytes/len(line)) // just under the read limit
	r := runScenario(b, scenario{
		turns: 100, tools: []string{"vfs_read_file"}, files: map[string]string{"big.txt": file},
		respond: readThenAnswer(func(int) string { return "/work/big.txt" }),
	})
	b.ReportMetric(float64(r.stored-int64(len(file)))/1e6, "stored-beyond-file-MB")
}

// BenchmarkServeToolResults is 30 turns that each read a different 2 KiB
// file and answer; it reports the smallest prefix reuse between
// consecutive requests from session/cache/report (1 when every request
// starts with the bytes of the one before).
func BenchmarkServeToolResults(b *testing.B) {
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("notes-%02d.md", i+1)] = strings.Repeat(fmt.Sprintf("note %02d: a line of notes.\n", i+1), 2048/27)
	}
	r := runScenario(b, scenario{
		turns: 30, tools: []string{"vfs_read_file"}, files: files,
		respond: readThenAnswer(func(n int) string { return fmt.Sprintf("/work/notes-%02d.md", n) }),
	})
	b.ReportMetric(r.minPrefixReuse, "min-prefix-reuse")
}

// scenario is one scripted session.
type scenario struct {
	turns int
	// tools and files: the session's tools, and the files of the workspace
	// it links at /work (none when empty).
	tools []string
	files map[string]string
	// respond answers a request body in the session's API kind.
	respond func(body []byte) string
	// apiKind is the session's API kind ("": Chat Completions).
	apiKind string
	// stream has the provider record ask for streams, and the fake send
	// its answers as the provider's event streams.
	stream bool
	// compaction is the session's compaction policy (none when nil).
	compaction *core.Compaction
	// postgres serves from a fresh PostgreSQL database (hosted mode)
	// instead of a data directory; temporal also runs the session on
	// Temporal, with one worker.
	postgres, temporal bool
}

// scenarioResult is what a benchmark reports beyond the common metrics.
type scenarioResult struct {
	stored         int64
	minPrefixReuse float64
}

// readThenAnswer answers a request whose last message is a user message
// with a vfs_read_file call of path(n) for the n-th run, and any other
// request with a short answer.
func readThenAnswer(path func(n int) string) func([]byte) string {
	runs := 0
	return func(body []byte) string {
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
			return textResponse("chatcmpl-bench", "?")
		}
		if req.Messages[len(req.Messages)-1].Role != "user" {
			return textResponse("chatcmpl-bench", "Read it.")
		}
		runs++
		args, _ := json.Marshal(map[string]string{"path": path(runs)})
		return toolCallResponse("chatcmpl-bench", fmt.Sprintf("call_%d", runs), "vfs_read_file", string(args))
	}
}

func runScenario(b *testing.B, sc scenario) scenarioResult {
	bin := benchBinary(b)
	cfg, _ := fakeProvider(b, sc)
	data := filepath.Join(b.TempDir(), "data")
	var res scenarioResult
	for range b.N {
		_ = os.RemoveAll(data)
		where := &backing{data: data}
		if sc.postgres || sc.temporal {
			where = hostedBacking(b, bin, sc.temporal)
		}
		srv := where.serve(b, bin, cfg)
		c := where.client(srv)
		ctx := context.Background()
		kind := sc.apiKind
		if kind == "" {
			kind = core.APIChatCompletions
		}
		params := api.CreateSessionParams{Model: core.ModelSelection{ProviderID: "fake", APIKind: kind, Model: "m"}, Tools: sc.tools, Compaction: sc.compaction}
		if len(sc.files) > 0 {
			if _, err := c.CreateWorkspace(ctx, api.WorkspaceCreateParams{Workspace: "bench"}); err != nil {
				b.Fatal(err)
			}
			for _, name := range slices.Sorted(maps.Keys(sc.files)) {
				if _, err := c.WriteFile(ctx, api.FileWriteParams{Workspace: "bench", Path: name, Data: []byte(sc.files[name])}); err != nil {
					b.Fatal(err)
				}
			}
			params.Links = []api.LinkParam{{Mount: "/work", Workspace: "bench"}}
		}
		s, err := c.CreateSession(ctx, params)
		if err != nil {
			b.Fatal(err)
		}
		var windows []time.Duration // CPU of turns 1-10, 11-20, ...
		var walls []time.Duration   // and the time they took
		var turnsCPU time.Duration  // over every turn, without the reads between
		var head int64
		var readsEarly [2]float64
		before, began := where.cpu(b, srv), time.Now()
		for turn := 1; turn <= sc.turns; turn++ {
			run, err := c.StartRun(ctx, api.RunStartParams{SessionID: s.SessionID, Input: []api.InputPart{{Type: "text", Text: fmt.Sprintf("Turn %d: a short message, as people write them.", turn)}}})
			if err != nil {
				b.Fatal(err)
			}
			waitCompleted(b, c, s.SessionID, run.RunID, &head)
			if turn%10 == 0 {
				now := where.cpu(b, srv)
				turnsCPU += now - before
				windows = append(windows, now-before)
				walls = append(walls, time.Since(began))
				if turn == 10 {
					readsEarly = readLatency(b, c, s.SessionID)
				}
				before, began = where.cpu(b, srv), time.Now() // the reads' CPU is not a turn's
			}
		}
		readsLate := readLatency(b, c, s.SessionID)
		rss := processRSS(b, srv.cmd.Process.Pid)
		res.minPrefixReuse = minPrefixReuse(b, c, s.SessionID)
		// A long run also logs the CPU of each 1,000 turns: a window of
		// 100 turns (perTurnAt) varies from run to run more than most changes.
		for from := 0; sc.turns >= 2000 && from+100 <= len(windows); from += 100 {
			var sum time.Duration
			for _, w := range windows[from : from+100] {
				sum += w
			}
			b.Logf("CPU a turn, turns %d-%d: %.2f ms", from*10+1, from*10+1000, sum.Seconds())
		}
		stopServer(b, srv)
		res.stored = where.bytes(b)
		for _, t := range []int{10, 100, 1000, 10000} {
			if v, ok := perTurnAt(windows, t); ok {
				b.ReportMetric(v, fmt.Sprintf("cpu-ms/turn@%d", t))
			}
			if v, ok := perTurnAt(walls, t); ok {
				b.ReportMetric(v, fmt.Sprintf("turn-ms@%d", t))
			}
		}
		b.ReportMetric(turnsCPU.Seconds()*1000/float64(sc.turns/10*10), "cpu-ms/turn-mean")
		// A cold read: the first session/read after a restart, which loads
		// the session from its checkpoint and the tail after it.
		srv = where.serve(b, bin, cfg)
		start := time.Now()
		if _, err := where.client(srv).ReadSession(ctx, s.SessionID); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "session/read-ms@cold")
		stopServer(b, srv)
		where.stopWorker(b)
		// A cold turn: the first run after a restart (or an idle
		// eviction) loads the session's state and lowers its whole
		// context, which no process has in memory.
		srv = where.serve(b, bin, cfg)
		c = where.client(srv)
		before = where.cpu(b, srv)
		start = time.Now()
		run, err := c.StartRun(ctx, api.RunStartParams{SessionID: s.SessionID, Input: []api.InputPart{{Type: "text", Text: "After a restart: a short message."}}})
		if err != nil {
			b.Fatal(err)
		}
		waitCompleted(b, c, s.SessionID, run.RunID, &head)
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "turn-ms@cold")
		b.ReportMetric((where.cpu(b, srv)-before).Seconds()*1000, "cpu-ms/turn@cold")
		stopServer(b, srv)
		where.stopWorker(b)
		if keep := os.Getenv("CAIRN_BENCH_KEEP"); keep != "" && where.postgres == "" {
			// Keep the data directory to look at with the CLI, e.g.
			// `cairn storage report --data DIR`.
			if err := os.Rename(data, keep); err != nil {
				b.Fatalf("keeping the data directory (CAIRN_BENCH_KEEP): %v", err)
			}
			b.Logf("data directory kept in %s", keep)
		}
		b.ReportMetric(float64(res.stored)/1e6, "stored-MB")
		b.ReportMetric(float64(rss)/1e6, "rss-MB@end")
		b.ReportMetric(readsEarly[0], "session/read-ms@10turns")
		b.ReportMetric(readsLate[0], "session/read-ms@end")
		b.ReportMetric(readsEarly[1], "context/read-ms@10turns")
		b.ReportMetric(readsLate[1], "context/read-ms@end")
		b.Logf("%d turns, %d events", sc.turns, head)
	}
	return res
}

// benchBinary is CAIRN_BENCH_BIN, so two builds can be alternated run by
// run (this machine's noise is larger than most changes' effect), or a
// cairn binary built for the benchmark.
func benchBinary(b *testing.B) string {
	if bin := os.Getenv("CAIRN_BENCH_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(b.TempDir(), "cairn")
	build := exec.Command("go", "build", "-o", bin, "../cmd/cairn")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		b.Fatal(err)
	}
	return bin
}

// fakeProvider starts the zero-latency provider that answers with
// sc.respond and writes the providers file that names it; it returns that
// file and a count of the connections the provider accepted.
func fakeProvider(b *testing.B, sc scenario) (config string, conns *atomic.Int64) {
	var mu sync.Mutex
	fake := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		answer := sc.respond(body)
		mu.Unlock()
		if sc.stream {
			stream, err := sse.For(r.URL.Path, []byte(answer))
			if err != nil {
				b.Error(err)
			}
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(stream)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	}))
	conns = new(atomic.Int64)
	fake.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	fake.Start()
	b.Cleanup(fake.Close)
	config = filepath.Join(b.TempDir(), "providers.json")
	if err := os.WriteFile(config, fmt.Appendf(nil, `{"providers":{"fake":{"baseUrl":%q,"stream":%t,"apiKinds":["chat_completions","openai_responses","anthropic_messages"]}}}`, fake.URL+"/v1", sc.stream), 0o600); err != nil {
		b.Fatal(err)
	}
	return config, conns
}

// perTurnAt is the CPU (or time) per turn at turn t, in ms, from that of
// each ten turns: the mean over the hundred turns ending at t (the first
// ten at turn 10), since the /proc clock ticks every 10 ms and a mean over
// ten turns would be ±1 ms.
func perTurnAt(windows []time.Duration, t int) (float64, bool) {
	if t%10 != 0 || t/10 > len(windows) {
		return 0, false
	}
	from := max(t/10-10, 0)
	var sum time.Duration
	for _, w := range windows[from : t/10] {
		sum += w
	}
	return sum.Seconds() * 1000 / float64((t/10-from)*10), true
}

// minPrefixReuse is the smallest prefix fraction session/cache/report
// gives for the session's generations after the first.
func minPrefixReuse(b *testing.B, c *api.Client, sessionID string) float64 {
	b.Helper()
	low := 1.0
	p := api.CacheReportParams{SessionID: sessionID}
	for {
		rep, err := c.CacheReport(context.Background(), p)
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range rep.Turns {
			if t.PrefixFraction != nil {
				low = min(low, *t.PrefixFraction)
			}
		}
		if rep.Cursor == 0 {
			return low
		}
		p.Before = rep.Cursor
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
		func() error {
			_, err := c.ReadContextPage(ctx, api.ContextReadParams{SessionID: sessionID})
			return err
		},
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
	if err := runCompleted(c, sessionID, runID, head); err != nil {
		b.Fatal(err)
	}
}

// runCompleted is waitCompleted for any goroutine: it returns what went
// wrong.
func runCompleted(c *api.Client, sessionID, runID string, head *int64) error {
	join := "run:" + runID
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		got, err := c.ReadEvents(context.Background(), api.EventsReadParams{SessionID: sessionID, After: *head, WaitMs: 5000})
		if err != nil {
			return err
		}
		for _, ev := range got.Events {
			*head = ev.Seq
			if !slices.Contains(ev.Joins, join) {
				continue
			}
			switch ev.Kind {
			case core.KindRunCompleted:
				return nil
			case core.KindRunFailed, core.KindRunCancelled:
				return fmt.Errorf("run %s: %s %s", runID, ev.Kind, ev.Payload)
			}
		}
	}
	return fmt.Errorf("run %s did not end", runID)
}

// processCPU is the process's user plus system CPU time so far.
func processCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("reading a process's CPU time (Linux /proc): %v", err)
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

// processRSS is the process's resident memory in bytes (VmRSS).
func processRSS(b *testing.B, pid int) int64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatalf("reading a process's memory (Linux /proc): %v", err)
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("parsing VmRSS %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc status")
	return 0
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
