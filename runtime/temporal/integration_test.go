package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/temporal"
	"github.com/cairn-agents/cairn/store/postgres"
)

// script answers generations with a function of the call number.
type script struct {
	mu    sync.Mutex
	calls int
	fn    func(ctx context.Context, n int, b blob.Store, req provider.Request) (provider.Output, error)
}

func (s *script) Generate(ctx context.Context, b blob.Store, req provider.Request) (provider.Output, error) {
	s.mu.Lock()
	n := s.calls
	s.calls++
	s.mu.Unlock()
	return s.fn(ctx, n, b, req)
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func answer(ctx context.Context, b blob.Store, text string) (provider.Output, error) {
	ref, err := blob.PutRef(ctx, b, []byte(text), content.MediaText, "")
	if err != nil {
		return provider.Output{}, err
	}
	return provider.Output{Finish: "stop", Entries: []core.EntryInput{{Kind: core.EntryMessage, Role: core.RoleAssistant, Content: ref, TokenEstimate: provider.Estimate([]byte(text)), Preview: text}}}, nil
}

// callTool is an Output asking for one call of name with args marshalled as
// JSON (nil: {}).
func callTool(ctx context.Context, b blob.Store, id, name string, args any) (provider.Output, error) {
	raw := []byte(`{}`)
	if args != nil {
		var err error
		if raw, err = json.Marshal(args); err != nil {
			return provider.Output{}, err
		}
	}
	argsRef, err := blob.PutRef(ctx, b, raw, content.MediaJSON, "")
	if err != nil {
		return provider.Output{}, err
	}
	native, err := blob.PutRef(ctx, b, []byte(`{"id":"`+id+`"}`), content.MediaJSON, "test.tool_call")
	if err != nil {
		return provider.Output{}, err
	}
	return provider.Output{Finish: "tool_calls",
		Entries:   []core.EntryInput{{Kind: core.EntryToolCall, Role: core.RoleAssistant, Content: native, CallID: id, ToolName: name}},
		ToolCalls: []core.ToolCall{{CallID: id, Name: name, Arguments: argsRef}}}, nil
}

type echoTool struct{ calls atomic.Int32 }

func (t *echoTool) Definition() provider.Tool {
	return provider.Tool{Name: "echo", Description: "echo", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (t *echoTool) Invoke(context.Context, runtime.ToolEnv, json.RawMessage) (runtime.ToolOutput, error) {
	t.calls.Add(1)
	return runtime.ToolOutput{Content: []byte("echoed")}, nil
}

// env is a Temporal deployment in one test: the real dev server, PostgreSQL,
// an in-process worker on a task queue of its own, and a gateway.
type env struct {
	t        *testing.T
	gw       *temporal.Gateway
	st       *postgres.Store
	client   client.Client
	adapter  *script
	universe string
}

func newEnv(t *testing.T, adapter *script, args temporal.SessionArgs, tools ...runtime.Tool) *env {
	t.Helper()
	e := newEnvWith(t, adapter, args, tools...)
	e.adapter = adapter
	return e
}

// newEnvWith is newEnv with any adapter for the chat_completions kind.
func newEnvWith(t *testing.T, adapter provider.Adapter, args temporal.SessionArgs, tools ...runtime.Tool) *env {
	t.Helper()
	addr := testenv.TemporalAddress(t)
	ctx := context.Background()
	db, err := postgres.Connect(ctx, testenv.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// Workflow ids are {universe}/{session} in a namespace shared by every
	// test: a universe of its own keeps this test's workflows apart.
	universe := runtime.RandomID("u")
	if err := db.EnsureUniverse(ctx, universe); err != nil {
		t.Fatal(err)
	}
	st, err := db.Store(ctx, universe, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	queue := runtime.RandomID("q-")
	reg, err := runtime.NewTools(tools...)
	if err != nil {
		t.Fatal(err)
	}
	acts := temporal.NewActivities(func(context.Context, string) (temporal.Store, error) { return st, nil },
		map[string]provider.Adapter{core.APIChatCompletions: adapter}, reg)
	w := temporal.NewWorker(c, queue, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return &env{t: t, gw: temporal.NewGateway(c, queue, universe, st, args), st: st, client: c, universe: universe}
}

func (e *env) create(id string, tools ...string) {
	e.t.Helper()
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "test", APIKind: core.APIChatCompletions, Model: "m"}, Tools: tools}
	if _, err := e.gw.CreateSession(context.Background(), id, cfg, nil); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) start(sessionID, text string) string {
	e.t.Helper()
	item, err := runtime.TextInput(context.Background(), e.st, text)
	if err != nil {
		e.t.Fatal(err)
	}
	adm, err := e.gw.Submit(context.Background(), sessionID, core.StartRun{AtMs: 1, RunID: runtime.RandomID("run_"), Input: []core.InputItem{item}})
	if err != nil {
		e.t.Fatal(err)
	}
	return adm.RunID
}

func (e *env) waitRun(sessionID, runID string) core.Run {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var r core.Run
		err := e.gw.Inspect(context.Background(), sessionID, func(s *core.State) {
			if x := s.Run(runID); x != nil {
				r = *x
			}
		})
		if err != nil {
			e.t.Fatal(err)
		}
		if r.Status != core.StatusQueued && r.Status != core.StatusRunning {
			return r
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("run %s still %s", runID, r.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *env) kinds(sessionID string) map[string]int {
	evs, err := e.st.ReadAfter(context.Background(), sessionID, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	n := map[string]int{}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			e.t.Fatalf("seq %d at position %d", ev.Seq, i+1)
		}
		n[ev.Kind]++
	}
	return n
}

// The engine issue's scripted session runs unchanged on the Temporal host:
// a tool round, then an answer that becomes the run's output.
func TestTemporal_ToolRoundCompletesThroughActivities(t *testing.T) {
	tool := &echoTool{}
	adapter := &script{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		if n == 0 {
			return callTool(ctx, b, "call_1", "echo", nil)
		}
		return answer(ctx, b, "done")
	}}
	e := newEnv(t, adapter, temporal.SessionArgs{}, tool)
	e.create("s1", "echo")
	run := e.waitRun("s1", e.start("s1", "go"))
	if run.Status != core.StatusCompleted || run.Output == nil {
		t.Fatalf("run %s: %+v", run.Status, run.Error)
	}
	if tool.calls.Load() != 1 || adapter.count() != 2 {
		t.Fatalf("%d tool calls, %d generations", tool.calls.Load(), adapter.count())
	}
	n := e.kinds("s1")
	if n[core.KindRunCompleted] != 1 || n[core.KindTurnGenerationCompleted] != 2 || n[core.KindToolCallCompleted] != 1 {
		t.Fatalf("events: %v", n)
	}
	st, err := e.gw.Status(context.Background(), "s1")
	if err != nil || st.ActiveRun != "" || st.Head == 0 {
		t.Fatalf("status query: %+v, %v", st, err)
	}
}

// Rejections come back through the update as typed core rejections, and
// change nothing.
func TestTemporal_RejectionsAreTypedThroughUpdates(t *testing.T) {
	adapter := &script{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		return answer(ctx, b, "ok")
	}}
	e := newEnv(t, adapter, temporal.SessionArgs{})
	e.create("s1")
	before := e.kinds("s1")
	stale := int64(7)
	item, _ := runtime.TextInput(context.Background(), e.st, "x")
	_, err := e.gw.Submit(context.Background(), "s1", core.AppendContext{AtMs: 1, ExpectedRevision: &stale,
		Entries: []core.EntryInput{{Kind: core.EntryMessage, Content: item.Content}}})
	var rej *core.Rejection
	if !errors.As(err, &rej) || rej.Kind != core.RejectRevisionConflict || rej.Expected == nil || *rej.Expected != 7 || rej.Actual == nil {
		t.Fatalf("err %v (%+v)", err, rej)
	}
	if _, err := e.gw.CreateSession(context.Background(), "s1", core.SessionConfig{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"}}, nil); !errors.As(err, &rej) || rej.Kind != core.RejectSessionExists {
		t.Fatalf("second create: %v", err)
	}
	if after := e.kinds("s1"); len(after) != len(before) {
		t.Fatalf("rejections appended events: %v → %v", before, after)
	}
}

// Steering admitted while the model call is in flight applies at the next
// turn boundary; cancelling a run cancels its in-flight model call.
func TestTemporal_SteeringAndCancelDuringAModelCall(t *testing.T) {
	entered := make(chan int, 8)
	release := make(chan struct{})
	adapter := &script{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		entered <- n
		if n == 0 || n == 2 {
			select {
			case <-release:
			case <-ctx.Done():
				return provider.Output{}, ctx.Err()
			}
		}
		return answer(ctx, b, "answer")
	}}
	e := newEnv(t, adapter, temporal.SessionArgs{HeartbeatTimeoutMs: 5000})
	e.create("s1")
	runID := e.start("s1", "first")
	<-entered
	item, _ := runtime.TextInput(context.Background(), e.st, "also this")
	if _, err := e.gw.Submit(context.Background(), "s1", core.Steer{AtMs: 2, SteeringID: "st1", Input: []core.InputItem{item}}); err != nil {
		t.Fatal(err)
	}
	release <- struct{}{}
	if run := e.waitRun("s1", runID); run.Status != core.StatusCompleted || run.Turns != 2 {
		t.Fatalf("steered run: %s after %d turns", run.Status, run.Turns)
	}

	runID = e.start("s1", "second")
	for n := <-entered; n != 2; n = <-entered { // the first run's second call is buffered too
	}
	if _, err := e.gw.Submit(context.Background(), "s1", core.CancelRun{AtMs: 3, RunID: runID}); err != nil {
		t.Fatal(err)
	}
	if run := e.waitRun("s1", runID); run.Status != core.StatusCancelled {
		t.Fatalf("cancelled run: %s", run.Status)
	}
	time.Sleep(200 * time.Millisecond)
	if adapter.count() != 3 {
		t.Fatalf("%d generations after cancel, want 3", adapter.count())
	}
}

// An idle workflow with a long history continues as new and rehydrates from
// the log; the session keeps working.
func TestTemporal_ContinuesAsNewWhenIdleWithLongHistory(t *testing.T) {
	adapter := &script{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		return answer(ctx, b, "ok")
	}}
	e := newEnv(t, adapter, temporal.SessionArgs{ContinueAsNewAfter: 40})
	e.create("s1")
	first := e.runID("s1")
	for i := 0; i < 4; i++ {
		if run := e.waitRun("s1", e.start("s1", "again")); run.Status != core.StatusCompleted {
			t.Fatalf("run %d: %s", i, run.Status)
		}
	}
	// The workflow continues as new once idle, just after the last run ends.
	for deadline := time.Now().Add(20 * time.Second); e.runID("s1") == first; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the workflow never continued as new")
		}
	}
	if n := e.kinds("s1"); n[core.KindRunCompleted] != 4 {
		t.Fatalf("events: %v", n)
	}
}

// runID is the id of the session workflow's current run.
func (e *env) runID(sessionID string) string {
	e.t.Helper()
	desc, err := e.client.DescribeWorkflowExecution(context.Background(), temporal.WorkflowID(e.universe, sessionID), "")
	if err != nil {
		e.t.Fatal(err)
	}
	return desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
}
