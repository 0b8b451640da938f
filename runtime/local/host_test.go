package local

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/runtime"
)

// The calls of one tool batch run at the same time: each of two tools waits
// until the other has started, so a sequential host would deadlock.
func TestHost_ToolCallsOfABatchRunConcurrently(t *testing.T) {
	var started atomic.Int32
	both := make(chan struct{})
	rendezvous := func(ctx context.Context) (runtime.ToolOutput, error) {
		if started.Add(1) == 2 {
			close(both)
		}
		select {
		case <-both:
			return runtime.ToolOutput{Content: []byte("done")}, nil
		case <-time.After(5 * time.Second):
			return runtime.ToolOutput{}, errors.New("the other call never started")
		}
	}
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		if n == 0 {
			return callTools(ctx, b, "left", "right")
		}
		return answer(ctx, b, "both done")
	}}
	e := newEnv(t, adapter, funcTool{"left", rendezvous}, funcTool{"right", rendezvous})
	e.create("s1", "left", "right")
	run := e.waitRun("s1", e.startRun("s1", "go"))
	if run.Status != core.StatusCompleted {
		t.Fatalf("run %s: %+v", run.Status, run.Error)
	}
	evs := e.events("s1")
	var statuses []string
	for _, ev := range evs {
		if ev.Kind == core.KindToolCallCompleted {
			var p core.ToolCallCompleted
			mustDecode(t, ev, &p)
			statuses = append(statuses, p.Status)
		}
	}
	if len(statuses) != 2 || statuses[0] != core.CallOK || statuses[1] != core.CallOK {
		t.Fatalf("call statuses %v, want two ok (a sequential host fails the rendezvous)", statuses)
	}
}

// A host that stops mid-generation leaves the run unfinished in the log; a new
// host over the same store resumes it and finishes it, with no event twice.
func TestHost_RestartResumesUnfinishedRunFromTheLog(t *testing.T) {
	entered := make(chan struct{}, 1)
	var crashed atomic.Bool
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		if !crashed.Load() {
			entered <- struct{}{}
			<-ctx.Done() // the "crash": the host goes away while the call is in flight
			return provider.Output{}, ctx.Err()
		}
		return answer(ctx, b, "finished by the second host")
	}}
	e := newEnv(t, adapter)
	e.create("s1")
	runID := e.startRun("s1", "go")
	<-entered
	e.host.Close()
	crashed.Store(true)
	headBefore := len(e.events("s1"))

	e.start()
	run := e.waitRun("s1", runID)
	if run.Status != core.StatusCompleted {
		t.Fatalf("resumed run %s", run.Status)
	}
	evs := e.events("s1")
	if len(evs) <= headBefore {
		t.Fatal("the second host appended nothing")
	}
	n := countKinds(evs)
	if n[core.KindTurnStarted] != 1 || n[core.KindTurnGenerationCompleted] != 1 || n[core.KindRunCompleted] != 1 {
		t.Fatalf("events after resume: %v", n)
	}
	replayed, err := core.Replay(evs)
	if err != nil {
		t.Fatal(err)
	}
	if replayed.Run(runID).Status != core.StatusCompleted {
		t.Fatal("replay disagrees with the live state")
	}
}

// Cancelling a run cancels its in-flight model call; no further turn is taken.
func TestHost_CancelStopsTheInFlightGeneration(t *testing.T) {
	entered := make(chan struct{}, 1)
	observed := make(chan error, 1)
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		entered <- struct{}{}
		<-ctx.Done()
		observed <- ctx.Err()
		return provider.Output{}, ctx.Err()
	}}
	e := newEnv(t, adapter)
	e.create("s1")
	runID := e.startRun("s1", "go")
	<-entered
	if _, err := e.host.Submit(context.Background(), "s1", core.CancelRun{AtMs: 2, RunID: runID}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-observed:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("generation saw %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the in-flight generation was not cancelled")
	}
	if run := e.waitRun("s1", runID); run.Status != core.StatusCancelled {
		t.Fatalf("run %s", run.Status)
	}
	time.Sleep(20 * time.Millisecond) // give a wrongly dispatched turn a chance to show up
	if adapter.count() != 1 {
		t.Fatalf("%d generations, want 1", adapter.count())
	}
}

// Retryable provider errors are retried (honouring Retry-After); a terminal
// one fails the run with the provider's message.
func TestHost_RetryableProviderErrorsRetryTerminalOnesFailTheRun(t *testing.T) {
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		switch n {
		case 0, 1:
			return provider.Output{}, &provider.Error{Status: 429, Retryable: true, RetryAfter: 5 * time.Millisecond, Message: "slow down"}
		case 2:
			return answer(ctx, b, "third time lucky")
		default:
			return provider.Output{}, &provider.Error{Status: 400, Message: "bad request"}
		}
	}}
	e := newEnv(t, adapter)
	e.create("s1")
	if run := e.waitRun("s1", e.startRun("s1", "one")); run.Status != core.StatusCompleted || adapter.count() != 3 {
		t.Fatalf("run %s after %d attempts", run.Status, adapter.count())
	}
	run := e.waitRun("s1", e.startRun("s1", "two"))
	if run.Status != core.StatusFailed || run.Error == nil || run.Error.Kind != "provider_error" {
		t.Fatalf("run %s, error %+v", run.Status, run.Error)
	}
	if adapter.count() != 4 {
		t.Fatalf("a terminal error was retried: %d attempts", adapter.count())
	}
}

// A tool that fails at the runtime boundary gives the model the constant
// "tool failed" result; a tool-reported error is shown to the model as is.
func TestHost_ToolFailuresBecomeResultsTheModelSees(t *testing.T) {
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		if n == 0 {
			return callTools(ctx, b, "broken", "complains")
		}
		return answer(ctx, b, "noted")
	}}
	broken := funcTool{"broken", func(context.Context) (runtime.ToolOutput, error) {
		return runtime.ToolOutput{}, errors.New("disk on fire")
	}}
	complains := funcTool{"complains", func(context.Context) (runtime.ToolOutput, error) {
		return runtime.ToolOutput{Content: []byte("no such file"), IsError: true}, nil
	}}
	e := newEnv(t, adapter, broken, complains)
	e.create("s1", "broken", "complains")
	if run := e.waitRun("s1", e.startRun("s1", "go")); run.Status != core.StatusCompleted {
		t.Fatalf("run %s", run.Status)
	}
	got := map[string]core.ToolCallCompleted{}
	for _, ev := range e.events("s1") {
		if ev.Kind == core.KindToolCallCompleted {
			var p core.ToolCallCompleted
			mustDecode(t, ev, &p)
			got[p.CallID] = p
		}
	}
	if p := got["call_broken_a"]; p.Status != core.CallFailed || p.Result.Digest != core.ToolFailedRef.Digest {
		t.Fatalf("broken tool: %+v", p)
	}
	if p := got["call_complains_b"]; p.Status != core.CallError || p.Result.Digest == core.ToolFailedRef.Digest {
		t.Fatalf("complaining tool: %+v", p)
	}
}

// A generation whose context does not match its planned fingerprint is never
// sent; the turn fails at the runtime boundary.
func TestExecutor_RefusesARequestThatDoesNotMatchItsFingerprint(t *testing.T) {
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		return answer(ctx, b, "should not be called")
	}}
	x := &runtime.Executor{Blobs: blob.NewMemory(), Adapters: map[string]provider.Adapter{core.APIChatCompletions: adapter}}
	w := core.GenerateWork{RunID: "r", Turn: 1, Fingerprint: "fp1:00", Config: core.SessionConfig{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"}}}
	_, err := x.Generate(context.Background(), "s", w)
	if !errors.Is(err, runtime.ErrFingerprintMismatch) || adapter.count() != 0 {
		t.Fatalf("err %v, %d calls", err, adapter.count())
	}
	res := runtime.FailedGeneration(w, err)
	if res.Failure == nil || res.Failure.Kind != "model_call_failed" || res.Failure.Ref == nil || res.Failure.Ref.Digest != core.ModelFailedRef.Digest {
		t.Fatalf("failure %+v", res.Failure)
	}
}

// Commands that the core rejects change nothing in the log.
func TestHost_RejectedCommandAppendsNothing(t *testing.T) {
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		return answer(ctx, b, "ok")
	}}
	e := newEnv(t, adapter)
	e.create("s1")
	before := len(e.events("s1"))
	stale := int64(99)
	_, err := e.host.Submit(context.Background(), "s1", core.RemoveContext{AtMs: 1, Keys: []string{"instructions.x"}, ExpectedRevision: &stale})
	var rej *core.Rejection
	if !errors.As(err, &rej) || rej.Kind != core.RejectRevisionConflict {
		t.Fatalf("err %v", err)
	}
	if after := len(e.events("s1")); after != before {
		t.Fatalf("log grew from %d to %d", before, after)
	}
	if _, err := e.host.CreateSession(context.Background(), "s1", core.SessionConfig{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"}}, nil); !errors.As(err, &rej) || rej.Kind != core.RejectSessionExists {
		t.Fatalf("second create: %v", err)
	}
	if _, err := e.host.CreateSession(context.Background(), "bad id/with slash", core.SessionConfig{}, nil); !errors.As(err, &rej) || rej.Kind != core.RejectInvalidInput {
		t.Fatalf("bad id: %v", err)
	}
}

func mustDecode(t *testing.T, ev core.Event, v any) {
	t.Helper()
	if err := jsonUnmarshal(ev.Payload, v); err != nil {
		t.Fatal(err)
	}
}

// A missing API key fails the run with a message that says what to set.
func TestExecutor_EndpointErrorsSayWhatToConfigure(t *testing.T) {
	err := fmt.Errorf("chat: %w", &endpoint.MissingKeyError{ProviderID: "openai", EnvVar: "OPENAI_API_KEY"})
	res := runtime.FailedGeneration(core.GenerateWork{RunID: "r", Turn: 1}, err)
	if res.Failure == nil || res.Failure.Kind != "endpoint_unavailable" || !strings.Contains(res.Failure.Message, "OPENAI_API_KEY") {
		t.Fatalf("failure %+v", res.Failure)
	}
}
