package temporal_test

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/temporal"
	"github.com/cairn-agents/cairn/store/postgres"
)

// procEnv is a deployment whose workers are processes the test starts and
// kills: the gateway and the store live in the test.
type procEnv struct {
	*env
	pgURL, queue string
}

func newProcEnv(t *testing.T, args temporal.SessionArgs) *procEnv {
	t.Helper()
	addr := testenv.TemporalAddress(t)
	ctx := context.Background()
	pgURL := testenv.PostgresURL(t)
	db, err := postgres.Connect(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	universe := runtime.RandomID("u")
	if err := db.EnsureUniverse(ctx, universe); err != nil {
		t.Fatal(err)
	}
	st, err := db.Store(ctx, universe, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	queue := runtime.RandomID("q-")
	e := &env{t: t, gw: temporal.NewGateway(c, queue, universe, st, args), st: st, client: c, universe: universe}
	t.Cleanup(func() {
		_ = c.TerminateWorkflow(context.Background(), temporal.WorkflowID(universe, "s1"), "", "test done")
	})
	return &procEnv{env: e, pgURL: pgURL, queue: queue}
}

func (e *procEnv) worker(crashAfter string) *procWorker {
	return startProcWorker(e.t, e.pgURL, e.universe, e.queue, crashAfter)
}

// submit sends a command and fails the test unless it is admitted in time.
func (e *env) submitWithin(sessionID string, cmd core.Command, d time.Duration) core.Admission {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	adm, err := e.gw.Submit(ctx, sessionID, cmd)
	if err != nil {
		e.t.Fatalf("%T: %v", cmd, err)
	}
	return adm
}

func (e *env) startWithin(sessionID, text string, d time.Duration) string {
	e.t.Helper()
	item, err := runtime.TextInput(context.Background(), e.st, text)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.submitWithin(sessionID, core.StartRun{AtMs: time.Now().UnixMilli(), RunID: runtime.RandomID("run_"), Input: []core.InputItem{item}}, d).RunID
}

// A worker killed while a cancelled run's parallel tool calls are still in
// flight: the next worker replays the session's history, cancellations
// included, and the session takes and finishes a new run. (The cancellations
// were issued in map order, so the replay issued them in another order than
// history held, failed as nondeterministic, and the session was wedged.)
func TestTemporal_KilledWorkerReplaysACancelledParallelToolRound(t *testing.T) {
	e := newProcEnv(t, temporal.SessionArgs{HeartbeatTimeoutMs: 2000})
	first := e.worker("")
	e.create("s1", "block")
	run := e.startWithin("s1", "parallel", time.Minute)
	for range parallelCalls {
		first.await(t, "block started", 30*time.Second)
	}
	e.submitWithin("s1", core.CancelRun{AtMs: time.Now().UnixMilli(), RunID: run}, time.Minute)
	if r := e.waitRun("s1", run); r.Status != core.StatusCancelled {
		t.Fatalf("cancelled run: %s", r.Status)
	}
	first.kill(t)

	e.worker("")
	next := e.startWithin("s1", "hello", 90*time.Second)
	if r := e.waitRun("s1", next); r.Status != core.StatusCompleted {
		t.Fatalf("run after the restart: %s (%+v)", r.Status, r.Error)
	}
}

// With every worker down, the status comes from the store (checkpoint plus
// event tail) and says so, instead of failing after the query times out.
func TestTemporal_StatusWithEveryWorkerDownComesFromTheStore(t *testing.T) {
	e := newProcEnv(t, temporal.SessionArgs{})
	w := e.worker("")
	e.create("s1")
	e.waitRun("s1", e.startWithin("s1", "hello", time.Minute))
	live, err := e.gw.Status(context.Background(), "s1")
	if err != nil || live.AsOfSeq != 0 {
		t.Fatalf("status with a worker up: %+v, %v", live, err)
	}
	w.kill(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := e.gw.Status(ctx, "s1")
	if err != nil {
		t.Fatalf("status with every worker down: %v", err)
	}
	if st.AsOfSeq == 0 || st.AsOfSeq != st.Head || st.Head < live.Head || st.SessionID != "s1" || st.ActiveRun != "" || st.Model.Model != "m" {
		t.Fatalf("status from the store: %+v (live: %+v)", st, live)
	}
}

// A worker dies inside a workflow task after that task's appends were
// stored: the next worker replays a state behind the log. A command that
// arrives then is decided again on the state rehydrated from the log, not
// failed with the append's head conflict.
func TestTemporal_CommandAfterAWorkerDiedMidTaskIsAdmittedAgain(t *testing.T) {
	e := newProcEnv(t, temporal.SessionArgs{HeartbeatTimeoutMs: 2000})
	first := e.worker(core.KindRunCompleted)
	e.create("s1")
	run := e.startWithin("s1", "hello", time.Minute)
	first.await(t, "crashing", time.Minute)
	first.kill(t)
	if r := e.waitRun("s1", run); r.Status != core.StatusCompleted {
		t.Fatalf("first run: %s", r.Status)
	}

	e.worker("")
	next := e.startWithin("s1", "again", 2*time.Minute)
	if r := e.waitRun("s1", next); r.Status != core.StatusCompleted {
		t.Fatalf("run after the restart: %s (%+v)", r.Status, r.Error)
	}
	if n := e.kinds("s1"); n[core.KindRunCompleted] != 2 {
		t.Fatalf("events: %v", n)
	}
}
