package temporal_test

// Measurements of the Temporal host against a real deployment (PostgreSQL
// store, Temporal dev server, an in-process worker on a task queue of its
// own): workflow history bytes per turn, read back from the server. The
// benchmarks that report these figures are in bench_test.go; the test below
// asserts the target.

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/objstore"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/temporal"
	"github.com/cairn-agents/cairn/store/postgres"
)

// Targets of issue 4 ("Measured").
const (
	maxHistoryBytesPerTurn = 4 << 10 // bytes of workflow history per turn
	maxPayloadGrowth       = 0.10    // 1 MiB against 1 KiB tool outputs
)

// measureRuns is the scripted session: runs of a tool round and an answer,
// two turns (generations) each.
const measureRuns = 3

// TestHistoryBytesPerTurnDoNotGrowWithPayload runs the same scripted session
// with 1 KiB and with 1 MiB tool outputs and checks, from the history the
// Temporal server stores, that the bytes per turn differ by less than 10 %
// and stay under 4 KiB: tool outputs live in CAS, only a ref and a bounded
// preview cross the workflow/activity boundary.
func TestHistoryBytesPerTurnDoNotGrowWithPayload(t *testing.T) {
	d := newMeasureDeployment(t)
	small := d.measure(t, 1<<10, measureRuns)
	large := d.measure(t, 1<<20, measureRuns)
	for _, m := range []historyMeasurement{small, large} {
		t.Logf("tool output %s: %.0f B/turn, %.1f events/turn (history %d → %d bytes, %d → %d events over %d turns)",
			sizeName(m.outputBytes), m.bytesPerTurn(), m.eventsPerTurn(), m.base.bytes, m.after.bytes, m.base.events, m.after.events, m.turns)
		t.Logf("per turn, by event (and activity or update) type:\n%s", m.breakdown.table(m.turns))
	}
	ratio := large.bytesPerTurn() / small.bytesPerTurn()
	t.Logf("1 MiB / 1 KiB: %.3f", ratio)
	if ratio-1 >= maxPayloadGrowth || 1-ratio >= maxPayloadGrowth {
		t.Errorf("history bytes per turn: %.0f with 1 KiB outputs, %.0f with 1 MiB (ratio %.3f): they must differ by less than %.0f %%",
			small.bytesPerTurn(), large.bytesPerTurn(), ratio, 100*maxPayloadGrowth)
	}
	for _, m := range []historyMeasurement{small, large} {
		// The session links no files and grants no MCP server: a Refresh
		// activity would be a round trip for nothing.
		if row := m.breakdown.rows["ActivityTaskScheduled Refresh"]; row != nil {
			t.Errorf("a session with nothing to refresh scheduled the Refresh activity %d times", row.events)
		}
		if m.bytesPerTurn() >= maxHistoryBytesPerTurn {
			t.Errorf("history bytes per turn with %s tool outputs: %.0f, target < %d", sizeName(m.outputBytes), m.bytesPerTurn(), maxHistoryBytesPerTurn)
		}
	}
}

// measureDeployment is a Temporal deployment for measurements: the real dev
// server, PostgreSQL, an in-process worker on its own task queue and a
// gateway, in a fresh universe. Its tool returns as many bytes per call as
// measure sets for the session and its model asks for the tool on even
// generations and answers on odd ones.
type measureDeployment struct {
	client   client.Client
	gw       *temporal.Gateway
	st       *postgres.Store
	universe string
	tool     *bytesTool
	nextID   atomic.Int64
}

// hostedStore is a fresh database with one universe, for a measurement;
// with objects, blobs over 64 KiB go to a local directory (else PostgreSQL
// refuses them).
func hostedStore(tb testing.TB, objects bool) (*postgres.DB, *postgres.Store, string, string) {
	tb.Helper()
	ctx := context.Background()
	url := testenv.PostgresURL(tb)
	db, err := postgres.Connect(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(db.Close)
	if _, err := db.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	universe := runtime.RandomID("u")
	if err := db.EnsureUniverse(ctx, universe); err != nil {
		tb.Fatal(err)
	}
	var dir objstore.Store
	if objects {
		if dir, err = objstore.NewDir(tb.TempDir()); err != nil {
			tb.Fatal(err)
		}
	}
	st, err := db.Store(ctx, universe, dir)
	if err != nil {
		tb.Fatal(err)
	}
	return db, st, universe, url
}

func dialTemporal(tb testing.TB) client.Client {
	tb.Helper()
	addr := testenv.TemporalAddress(tb)
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger{}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

func newMeasureDeployment(tb testing.TB) *measureDeployment {
	tb.Helper()
	_, st, universe, _ := hostedStore(tb, true)
	c := dialTemporal(tb)
	tool := &bytesTool{}
	reg, err := runtime.NewTools(tool)
	if err != nil {
		tb.Fatal(err)
	}
	model := &script{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		if n%2 == 0 {
			return callTool(ctx, b, fmt.Sprintf("call_%d", n), tool.Definition().Name, nil)
		}
		return answer(ctx, b, "done")
	}}
	queue := runtime.RandomID("q-")
	acts := temporal.NewActivities(func(context.Context, string) (temporal.Store, error) { return st, nil },
		map[string]provider.Adapter{core.APIChatCompletions: model}, reg)
	w := temporal.NewWorker(c, queue, acts)
	if err := w.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(w.Stop)
	// No continue-as-new during a measurement: it would reset the history.
	args := temporal.SessionArgs{ContinueAsNewAfter: 1 << 30}
	return &measureDeployment{client: c, gw: temporal.NewGateway(c, queue, universe, st, args), st: st, universe: universe, tool: tool}
}

// bytesTool returns a text of exactly size bytes, different on every call.
type bytesTool struct {
	size  atomic.Int64
	calls atomic.Int64
}

func (t *bytesTool) Definition() provider.Tool {
	return provider.Tool{Name: "dump", Description: "returns a large text", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (t *bytesTool) Invoke(context.Context, runtime.ToolEnv, json.RawMessage) (runtime.ToolOutput, error) {
	return runtime.ToolOutput{Content: textOfSize(int(t.size.Load()), t.calls.Add(1))}, nil
}

// textOfSize is n bytes of ASCII text that start with the call number, so
// every output is a different blob and its preview is the full 280 bytes.
func textOfSize(n int, call int64) []byte {
	line := fmt.Sprintf("call %d: the quick brown fox jumps over the lazy dog 0123456789\n", call)
	out := make([]byte, 0, n+len(line))
	for len(out) < n {
		out = append(out, line...)
	}
	return out[:n]
}

// historyPoint is the size of a workflow's history as the server reports it.
type historyPoint struct {
	bytes, events int64
}

// historyMeasurement is one scripted session: the history after the session
// was opened (the workflow started, rehydrated and appended the open) and
// after its runs; the difference divided by the turns is the per-turn cost.
type historyMeasurement struct {
	outputBytes int
	runs, turns int
	base, after historyPoint
	breakdown   breakdown // of the events after base
	failure     string    // why a naive session stopped early
}

func (m historyMeasurement) bytesPerTurn() float64 {
	return float64(m.after.bytes-m.base.bytes) / float64(m.turns)
}

func (m historyMeasurement) eventsPerTurn() float64 {
	return float64(m.after.events-m.base.events) / float64(m.turns)
}

// measure runs one scripted session with tool outputs of outputBytes.
func (d *measureDeployment) measure(tb testing.TB, outputBytes, runs int) historyMeasurement {
	tb.Helper()
	ctx := context.Background()
	d.tool.size.Store(int64(outputBytes))
	sessionID := fmt.Sprintf("s%d", d.nextID.Add(1))
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "test", APIKind: core.APIChatCompletions, Model: "m"}, Tools: []string{d.tool.Definition().Name}}
	if _, err := d.gw.CreateSession(ctx, sessionID, cfg, nil); err != nil {
		tb.Fatal(err)
	}
	wf := temporal.WorkflowID(d.universe, sessionID)
	m := historyMeasurement{outputBytes: outputBytes, runs: runs, turns: 2 * runs}
	m.base = waitQuiescent(tb, d.client, wf)
	for i := 0; i < runs; i++ {
		item, err := runtime.TextInput(ctx, d.st, fmt.Sprintf("run %d: read the dump", i))
		if err != nil {
			tb.Fatal(err)
		}
		adm, err := d.gw.Submit(ctx, sessionID, core.StartRun{AtMs: 1, RunID: runtime.RandomID("run_"), Input: []core.InputItem{item}})
		if err != nil {
			tb.Fatal(err)
		}
		run := waitRunDone(tb, d.gw, sessionID, adm.RunID)
		if run.Status != core.StatusCompleted || run.Turns != 2 {
			tb.Fatalf("run %d: %s after %d turns (%+v)", i, run.Status, run.Turns, run.Error)
		}
	}
	m.after = waitQuiescent(tb, d.client, wf)
	m.breakdown = historyBreakdown(tb, d.client, wf, m.base.events)
	// Every activity succeeded on its first attempt: a retry or a failure
	// would be measured as part of a turn.
	if got := m.breakdown.generations(); got != m.turns {
		tb.Fatalf("%d generate activities completed after the base, want %d turns\n%s", got, m.turns, m.breakdown.table(m.turns))
	}
	if m.breakdown.retries != 0 {
		tb.Fatalf("%d activity retries or failures in the session\n%s", m.breakdown.retries, m.breakdown.table(m.turns))
	}
	return m
}

// waitRunDone polls the session log until the run ends.
func waitRunDone(tb testing.TB, gw *temporal.Gateway, sessionID, runID string) core.Run {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var r core.Run
		err := gw.Inspect(context.Background(), sessionID, func(s *core.State) {
			if x := s.Run(runID); x != nil {
				r = *x
			}
		})
		if err != nil {
			tb.Fatal(err)
		}
		if r.Status != core.StatusQueued && r.Status != core.StatusRunning {
			return r
		}
		if time.Now().After(deadline) {
			tb.Fatalf("run %s still %s", runID, r.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitQuiescent waits until the workflow has neither a workflow task nor an
// activity pending and its history stopped growing, and returns its size.
func waitQuiescent(tb testing.TB, c client.Client, workflowID string) historyPoint {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last historyPoint
	for {
		desc, err := c.DescribeWorkflowExecution(context.Background(), workflowID, "")
		if err != nil {
			tb.Fatal(err)
		}
		info := desc.GetWorkflowExecutionInfo()
		p := historyPoint{bytes: info.GetHistorySizeBytes(), events: info.GetHistoryLength()}
		if desc.GetPendingWorkflowTask() == nil && len(desc.GetPendingActivities()) == 0 && p == last {
			return p
		}
		if time.Now().After(deadline) {
			tb.Fatalf("workflow %s never settled: %+v", workflowID, desc)
		}
		last = p
		time.Sleep(50 * time.Millisecond)
	}
}

// breakdown sums events by type; activity events are split by activity type
// and update events by update name.
type breakdown struct {
	rows    map[string]*breakdownRow
	retries int // activity attempts after the first, and activity failures
	// appended splits the Append activities' inputs by the kind of event
	// proposed (JSON bytes of each proposal, of which its event payload).
	appended map[string]*breakdownRow
}

type breakdownRow struct {
	events       int
	bytes        int // proto.Size of the events
	payloadBytes int // of which payload data (activity input and result, update args and result)
}

// historyBreakdown reads the workflow's history from the server and sums the
// events after the first `after`.
func historyBreakdown(tb testing.TB, c client.Client, workflowID string, after int64) breakdown {
	tb.Helper()
	out := breakdown{rows: map[string]*breakdownRow{}, appended: map[string]*breakdownRow{}}
	activityOf := map[int64]string{} // scheduled event id → activity type
	updateOf := map[string]string{}  // update id → update name
	it := c.GetWorkflowHistory(context.Background(), workflowID, "", false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			tb.Fatal(err)
		}
		key, payload := classify(ev, activityOf, updateOf)
		if ev.GetEventId() <= after {
			continue
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a.GetAttempt() > 1 {
			out.retries++
		}
		if ev.GetActivityTaskFailedEventAttributes() != nil || ev.GetActivityTaskTimedOutEventAttributes() != nil {
			out.retries++
		}
		row := out.rows[key]
		if row == nil {
			row = &breakdownRow{}
			out.rows[key] = row
		}
		row.events++
		row.bytes += proto.Size(ev)
		row.payloadBytes += payload
		if a := ev.GetActivityTaskScheduledEventAttributes(); a.GetActivityType().GetName() == "Append" {
			for _, p := range a.GetInput().GetPayloads() {
				var in temporal.AppendIn
				if err := json.Unmarshal(p.GetData(), &in); err != nil {
					tb.Fatal(err)
				}
				for _, prop := range in.Proposals {
					raw, _ := json.Marshal(prop)
					r := out.appended[prop.Kind]
					if r == nil {
						r = &breakdownRow{}
						out.appended[prop.Kind] = r
					}
					r.events++
					r.bytes += len(raw)
					r.payloadBytes += len(prop.Payload)
				}
			}
		}
	}
	return out
}

func classify(ev *historypb.HistoryEvent, activityOf map[int64]string, updateOf map[string]string) (string, int) {
	name := ev.GetEventType().String()
	switch {
	case ev.GetActivityTaskScheduledEventAttributes() != nil:
		a := ev.GetActivityTaskScheduledEventAttributes()
		activityOf[ev.GetEventId()] = a.GetActivityType().GetName()
		return name + " " + a.GetActivityType().GetName(), payloadsSize(a.GetInput().GetPayloads())
	case ev.GetActivityTaskStartedEventAttributes() != nil:
		return name + " " + activityOf[ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId()], 0
	case ev.GetActivityTaskCompletedEventAttributes() != nil:
		a := ev.GetActivityTaskCompletedEventAttributes()
		return name + " " + activityOf[a.GetScheduledEventId()], payloadsSize(a.GetResult().GetPayloads())
	case ev.GetActivityTaskFailedEventAttributes() != nil:
		return name + " " + activityOf[ev.GetActivityTaskFailedEventAttributes().GetScheduledEventId()], 0
	case ev.GetWorkflowExecutionUpdateAcceptedEventAttributes() != nil:
		req := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest()
		updateOf[req.GetMeta().GetUpdateId()] = req.GetInput().GetName()
		return name + " " + req.GetInput().GetName(), payloadsSize(req.GetInput().GetArgs().GetPayloads())
	case ev.GetWorkflowExecutionUpdateCompletedEventAttributes() != nil:
		a := ev.GetWorkflowExecutionUpdateCompletedEventAttributes()
		return name + " " + updateOf[a.GetMeta().GetUpdateId()], payloadsSize(a.GetOutcome().GetSuccess().GetPayloads())
	}
	return name, 0
}

func payloadsSize[P interface{ GetData() []byte }](ps []P) int {
	n := 0
	for _, p := range ps {
		n += len(p.GetData())
	}
	return n
}

func (b breakdown) generations() int {
	if r := b.rows["ActivityTaskCompleted Generate"]; r != nil {
		return r.events
	}
	return 0
}

func (b breakdown) total() (events, bytes, payload int) {
	for _, r := range b.rows {
		events, bytes, payload = events+r.events, bytes+r.bytes, payload+r.payloadBytes
	}
	return
}

// table prints the rows per turn, largest first.
func (b breakdown) table(turns int) string {
	keys := make([]string, 0, len(b.rows))
	for k := range b.rows {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if b.rows[keys[i]].bytes != b.rows[keys[j]].bytes {
			return b.rows[keys[i]].bytes > b.rows[keys[j]].bytes
		}
		return keys[i] < keys[j]
	})
	var sb strings.Builder
	fmt.Fprintf(&sb, "  %-50s %12s %12s %14s\n", "event type", "events/turn", "bytes/turn", "payload/turn")
	for _, k := range keys {
		r := b.rows[k]
		fmt.Fprintf(&sb, "  %-50s %12.2f %12.0f %14.0f\n", k, float64(r.events)/float64(turns), float64(r.bytes)/float64(turns), float64(r.payloadBytes)/float64(turns))
	}
	e, by, p := b.total()
	fmt.Fprintf(&sb, "  %-50s %12.2f %12.0f %14.0f\n", "total (sum of proto.Size)", float64(e)/float64(turns), float64(by)/float64(turns), float64(p)/float64(turns))
	if len(b.appended) > 0 {
		fmt.Fprintf(&sb, "  Append inputs by proposed event kind:\n  %-50s %12s %12s %14s\n", "event kind", "events/turn", "JSON/turn", "payload/turn")
		kinds := make([]string, 0, len(b.appended))
		for k := range b.appended {
			kinds = append(kinds, k)
		}
		sort.Slice(kinds, func(i, j int) bool { return b.appended[kinds[i]].bytes > b.appended[kinds[j]].bytes })
		for _, k := range kinds {
			r := b.appended[k]
			fmt.Fprintf(&sb, "  %-50s %12.2f %12.0f %14.0f\n", k, float64(r.events)/float64(turns), float64(r.bytes)/float64(turns), float64(r.payloadBytes)/float64(turns))
		}
	}
	return sb.String()
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// quietLogger drops the SDK's debug and info logs (a benchmark's output is
// its figures) and keeps warnings and errors.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(msg string, kv ...any) {
	log.Println(append([]any{"temporal sdk: WARN", msg}, kv...)...)
}
func (quietLogger) Error(msg string, kv ...any) {
	log.Println(append([]any{"temporal sdk: ERROR", msg}, kv...)...)
}
