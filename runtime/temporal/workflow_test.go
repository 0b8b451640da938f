package temporal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	ctemporal "github.com/cairn-agents/cairn/runtime/temporal"
	"github.com/cairn-agents/cairn/store"
)

// memStore is a universe's store in memory, for the SDK's test environment.
type memStore struct {
	*store.Memory
	blob.Store
}

// unitEnv runs the session workflow in the SDK's test environment (no
// server, skipped timers) with the real activities on memory stores.
func unitEnv(t *testing.T, adapter provider.Adapter, tools ...runtime.Tool) (*testsuite.TestWorkflowEnvironment, memStore) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	blobs := blob.NewMemory()
	st := memStore{Memory: store.NewMemory(blobs), Store: blobs}
	reg, err := runtime.NewTools(tools...)
	if err != nil {
		t.Fatal(err)
	}
	env.RegisterWorkflowWithOptions(ctemporal.SessionWorkflow, workflow.RegisterOptions{Name: ctemporal.WorkflowName})
	env.RegisterActivity(ctemporal.NewActivities(func(context.Context, string) (ctemporal.Store, error) { return st, nil },
		map[string]provider.Adapter{core.APIChatCompletions: adapter}, reg))
	return env, st
}

// submit sends a command as an update and records its outcome.
func submit(t *testing.T, env *testsuite.TestWorkflowEnvironment, cmd core.Command, out *error) {
	wire, err := ctemporal.WrapCommand(cmd)
	if err != nil {
		t.Fatal(err)
	}
	env.UpdateWorkflow(ctemporal.UpdateSubmit, "", &testsuite.TestUpdateCallback{
		OnAccept:   func() {},
		OnReject:   func(err error) { *out = err },
		OnComplete: func(_ any, err error) { *out = err },
	}, wire)
}

var unitConfig = core.SessionConfig{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"}, Tools: []string{"echo"}}

func TestWorkflow_RunsAToolRoundAndClosesInTheTestEnvironment(t *testing.T) {
	adapter := &script{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		if n == 0 {
			return callTool(ctx, b, "call_1", "echo", nil)
		}
		return answer(ctx, b, "done")
	}}
	tool := &echoTool{}
	env, st := unitEnv(t, adapter, tool)
	item, err := runtime.TextInput(context.Background(), st, "go")
	if err != nil {
		t.Fatal(err)
	}
	var openErr, runErr, closeErr error
	var status ctemporal.Status
	env.RegisterDelayedCallback(func() { submit(t, env, core.OpenSession{AtMs: 1, SessionID: "s1", Config: unitConfig}, &openErr) }, 0)
	env.RegisterDelayedCallback(func() {
		submit(t, env, core.StartRun{AtMs: 2, RunID: "r1", Input: []core.InputItem{item}}, &runErr)
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(ctemporal.QueryStatus)
		if err == nil {
			err = v.Get(&status)
		}
		if err != nil {
			t.Errorf("query: %v", err)
		}
		submit(t, env, core.CloseSession{AtMs: 3}, &closeErr)
	}, time.Minute)
	env.ExecuteWorkflow(ctemporal.WorkflowName, ctemporal.SessionArgs{Universe: "u", SessionID: "s1"})

	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	if openErr != nil || runErr != nil || closeErr != nil {
		t.Fatalf("updates: %v, %v, %v", openErr, runErr, closeErr)
	}
	if status.ActiveRun != "" || status.Head == 0 || status.SessionID != "s1" {
		t.Fatalf("status before close: %+v", status)
	}
	evs, err := st.ReadAfter(context.Background(), "s1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, ev := range evs {
		n[ev.Kind]++
	}
	if n[core.KindRunCompleted] != 1 || n[core.KindToolCallCompleted] != 1 || n[core.KindSessionClosed] != 1 || tool.calls.Load() != 1 {
		t.Fatalf("events %v, tool calls %d", n, tool.calls.Load())
	}
}

func TestWorkflow_RejectionsAreTypedApplicationErrors(t *testing.T) {
	adapter := &script{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		return answer(ctx, b, "ok")
	}}
	env, _ := unitEnv(t, adapter)
	var openErr, staleErr, closeErr error
	stale := int64(9)
	env.RegisterDelayedCallback(func() { submit(t, env, core.OpenSession{AtMs: 1, SessionID: "s1", Config: unitConfig}, &openErr) }, 0)
	env.RegisterDelayedCallback(func() {
		submit(t, env, core.RemoveContext{AtMs: 2, Keys: []string{"instructions.main"}, ExpectedRevision: &stale}, &staleErr)
	}, time.Second)
	env.RegisterDelayedCallback(func() { submit(t, env, core.CloseSession{AtMs: 3}, &closeErr) }, time.Minute)
	env.ExecuteWorkflow(ctemporal.WorkflowName, ctemporal.SessionArgs{Universe: "u", SessionID: "s1"})
	var appErr *temporal.ApplicationError
	if !errors.As(staleErr, &appErr) || appErr.Type() != "rejection:"+core.RejectRevisionConflict {
		t.Fatalf("stale removal: %v", staleErr)
	}
	if openErr != nil || closeErr != nil {
		t.Fatalf("updates: %v, %v", openErr, closeErr)
	}
}
