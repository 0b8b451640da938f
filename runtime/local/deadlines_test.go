package local

import (
	"context"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// A client call with a timeout that nobody answers expires at its
// deadline: the host's timer admits the expiry, the model sees the
// constant "timed out" result, and the run goes on to its answer.
func TestHost_AClientCallExpiresAtItsDeadline(t *testing.T) {
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		if n == 0 {
			return callTools(ctx, b, "lookup")
		}
		return answer(ctx, b, "gave up waiting")
	}}
	e := newEnv(t, adapter)
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "test", APIKind: core.APIChatCompletions, Model: "m"}, Tools: []string{"lookup"},
		ClientTools: []core.ClientTool{{Name: "lookup", Parameters: []byte(`{"type":"object"}`), TimeoutMs: 50}}}
	if _, err := e.host.CreateSession(context.Background(), "s1", cfg, nil); err != nil {
		t.Fatal(err)
	}
	run := e.startRun("s1", "look it up")
	if r := e.waitRun("s1", run); r.Status != core.StatusCompleted {
		t.Fatalf("run %s", r.Status)
	}
	completed := payloadsOf[core.ToolCallCompleted](t, e.events("s1"), core.KindToolCallCompleted)
	if len(completed) != 1 || completed[0].Status != core.CallError || completed[0].Result != core.ToolTimedOutRef {
		t.Fatalf("completions %+v; want the call timed out", completed)
	}
}
