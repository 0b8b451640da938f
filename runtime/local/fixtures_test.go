package local

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// scriptAdapter answers generations with a function of the call number.
type scriptAdapter struct {
	mu    sync.Mutex
	calls int
	fn    func(ctx context.Context, n int, blobs blob.Store, req provider.Request) (provider.Output, error)
}

func (a *scriptAdapter) Generate(ctx context.Context, blobs blob.Store, req provider.Request) (provider.Output, error) {
	a.mu.Lock()
	n := a.calls
	a.calls++
	a.mu.Unlock()
	return a.fn(ctx, n, blobs, req)
}

func (a *scriptAdapter) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

// answer is an Output with one assistant text message.
func answer(ctx context.Context, blobs blob.Store, text string) (provider.Output, error) {
	ref, err := blob.PutRef(ctx, blobs, []byte(text), content.MediaText, "")
	if err != nil {
		return provider.Output{}, err
	}
	return provider.Output{Finish: "stop", Entries: []core.EntryInput{{Kind: core.EntryMessage, Role: core.RoleAssistant, Content: ref, TokenEstimate: provider.Estimate([]byte(text))}}}, nil
}

// callTools is an Output asking for one call per tool name.
func callTools(ctx context.Context, blobs blob.Store, names ...string) (provider.Output, error) {
	out := provider.Output{Finish: "tool_calls"}
	for i, name := range names {
		args, err := blob.PutRef(ctx, blobs, []byte(`{}`), content.MediaJSON, "")
		if err != nil {
			return out, err
		}
		id := "call_" + name + "_" + string(rune('a'+i))
		raw, _ := json.Marshal(map[string]string{"id": id, "name": name})
		ref, err := blob.PutRef(ctx, blobs, raw, content.MediaJSON, "test.tool_call")
		if err != nil {
			return out, err
		}
		out.Entries = append(out.Entries, core.EntryInput{Kind: core.EntryToolCall, Role: core.RoleAssistant, Content: ref, CallID: id, ToolName: name})
		out.ToolCalls = append(out.ToolCalls, core.ToolCall{CallID: id, Name: name, Arguments: args})
	}
	return out, nil
}

// funcTool is a test tool.
type funcTool struct {
	name string
	fn   func(ctx context.Context) (runtime.ToolOutput, error)
}

func (t funcTool) Definition() provider.Tool {
	return provider.Tool{Name: t.name, Description: "test tool", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (t funcTool) Invoke(ctx context.Context, _ runtime.ToolEnv, _ json.RawMessage) (runtime.ToolOutput, error) {
	return t.fn(ctx)
}

// env is a host on shared memory stores, restartable over the same stores.
type env struct {
	t       *testing.T
	blobs   *blob.Memory
	log     *store.Memory
	adapter *scriptAdapter
	tools   *runtime.Tools
	host    *Host
	logger  *slog.Logger // the host's, when set before start
}

func newEnv(t *testing.T, adapter *scriptAdapter, tools ...runtime.Tool) *env {
	t.Helper()
	blobs := blob.NewMemory()
	reg, err := runtime.NewTools(tools...)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, blobs: blobs, log: store.NewMemory(blobs), adapter: adapter, tools: reg}
	e.start()
	return e
}

// start (re)starts a host over the env's stores.
func (e *env) start() {
	e.t.Helper()
	e.host = New(Options{
		Log: e.log, Blobs: e.blobs,
		Executor: &runtime.Executor{Blobs: e.blobs, Adapters: map[string]provider.Adapter{core.APIChatCompletions: e.adapter}, Tools: e.tools, Files: e.log},
		Retry:    RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 50 * time.Millisecond},
		Logger:   e.logger,
	})
	if err := e.host.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	h := e.host
	e.t.Cleanup(h.Close)
}

func (e *env) create(id string, tools ...string) {
	e.t.Helper()
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "test", APIKind: core.APIChatCompletions, Model: "m"}, Tools: tools}
	if _, err := e.host.CreateSession(context.Background(), id, cfg, nil); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) startRun(sessionID, text string) string {
	e.t.Helper()
	item, err := runtime.TextInput(context.Background(), e.blobs, text)
	if err != nil {
		e.t.Fatal(err)
	}
	adm, err := e.host.Submit(context.Background(), sessionID, core.StartRun{AtMs: 1, RunID: e.host.NewID("run_"), Input: []core.InputItem{item}})
	if err != nil {
		e.t.Fatal(err)
	}
	return adm.RunID
}

// waitRun waits until the run is no longer queued or running.
func (e *env) waitRun(sessionID, runID string) *core.Run {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var snapshot core.Run
		var done bool
		err := e.host.Inspect(context.Background(), sessionID, func(s *core.State) {
			r := s.Run(runID)
			snapshot = *r
			done = r.Status != core.StatusQueued && r.Status != core.StatusRunning
		})
		if err != nil {
			e.t.Fatal(err)
		}
		if done {
			return &snapshot
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("run %s still %s", runID, snapshot.Status)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (e *env) events(sessionID string) []core.Event {
	e.t.Helper()
	evs, err := e.log.ReadAfter(context.Background(), sessionID, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

// payloadsOf decodes the payloads of the events of kind, in order.
func payloadsOf[T any](t testing.TB, evs []core.Event, kind string) []T {
	t.Helper()
	var out []T
	for _, ev := range evs {
		if ev.Kind != kind {
			continue
		}
		var p T
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatalf("%s at %d: %v", kind, ev.Seq, err)
		}
		out = append(out, p)
	}
	return out
}

func countKinds(evs []core.Event) map[string]int {
	n := map[string]int{}
	for _, ev := range evs {
		n[ev.Kind]++
	}
	return n
}

var jsonUnmarshal = json.Unmarshal
