package temporal_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime/temporal"
)

// A client call with a timeout that nobody answers expires on a workflow
// timer: the model sees the constant "timed out" result and the run ends.
func TestTemporal_AClientCallExpiresOnAWorkflowTimer(t *testing.T) {
	adapter := &script{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		if n == 0 {
			return callTool(ctx, b, "call_1", "lookup", nil)
		}
		return answer(ctx, b, "gave up waiting")
	}}
	e := newEnv(t, adapter, temporal.SessionArgs{})
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "test", APIKind: core.APIChatCompletions, Model: "m"}, Tools: []string{"lookup"},
		ClientTools: []core.ClientTool{{Name: "lookup", Parameters: []byte(`{"type":"object"}`), TimeoutMs: 1000}}}
	if _, err := e.gw.CreateSession(context.Background(), "s1", cfg, nil); err != nil {
		t.Fatal(err)
	}
	run := e.waitRun("s1", e.start("s1", "look it up"))
	if run.Status != core.StatusCompleted {
		t.Fatalf("run %s: %+v", run.Status, run.Error)
	}
	evs, err := e.st.ReadAfter(context.Background(), "s1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var completed []core.ToolCallCompleted
	for _, ev := range evs {
		if ev.Kind == core.KindToolCallCompleted {
			var p core.ToolCallCompleted
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				t.Fatal(err)
			}
			completed = append(completed, p)
		}
	}
	if len(completed) != 1 || completed[0].Status != core.CallError || completed[0].Result != core.ToolTimedOutRef {
		t.Fatalf("completions %+v; want the call timed out", completed)
	}
}
