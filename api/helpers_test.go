package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store"
)

// waitLimit bounds every wait in these tests; nothing should come near it.
const waitLimit = 10 * time.Second

// fakeModel is a provider.Adapter that answers "echo: <last user message>"
// as a Chat Completions assistant message blob. With hold set, each call
// waits for a release (or for its context to end) before answering, so a
// test can keep a run open.
type fakeModel struct {
	mu        sync.Mutex
	hold      bool
	requests  []provider.Request
	arrived   chan int      // call number, sent when a call starts
	release   chan struct{} // one send lets one held call answer
	cancelled chan int      // call number, sent when a held call's context ends

	fail int // the next this many calls answer a terminal provider error

	compactions []provider.CompactRequest
	compactFail bool          // answer compactions with a failure
	compactGate chan struct{} // when set, a compaction waits for a receive from it
}

func newFakeModel() *fakeModel {
	return &fakeModel{arrived: make(chan int, 64), release: make(chan struct{}), cancelled: make(chan int, 64)}
}

var _ provider.Adapter = (*fakeModel)(nil)

func (m *fakeModel) setHold(hold bool) {
	m.mu.Lock()
	m.hold = hold
	m.mu.Unlock()
}

func (m *fakeModel) request(n int) provider.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[n]
}

func (m *fakeModel) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

func (m *fakeModel) Generate(ctx context.Context, blobs blob.Store, req provider.Request) (provider.Output, error) {
	m.mu.Lock()
	n := len(m.requests)
	m.requests = append(m.requests, req)
	hold, fail := m.hold, m.fail > 0
	if fail {
		m.fail--
	}
	m.mu.Unlock()
	select {
	case m.arrived <- n:
	case <-ctx.Done():
		return provider.Output{}, ctx.Err()
	}
	if fail {
		return provider.Output{}, &provider.Error{Status: 400, Message: "fake: refused"}
	}
	if req.OnDelta != nil { // streams its answer's first piece, as a provider would
		req.OnDelta(provider.Delta{Kind: provider.DeltaText, Text: "echo: "})
	}
	if hold {
		select {
		case <-m.release:
		case <-ctx.Done():
			m.cancelled <- n
			return provider.Output{}, ctx.Err()
		}
	}
	user, err := lastUserText(ctx, blobs, req.Entries)
	if err != nil {
		return provider.Output{}, err
	}
	if user == callClientTool && req.Entries[len(req.Entries)-1].Kind != core.EntryToolResult {
		return clientToolCall(ctx, blobs)
	}
	text := "echo: " + user
	native, err := json.Marshal(map[string]string{"role": "assistant", "content": text})
	if err != nil {
		return provider.Output{}, err
	}
	ref, err := blob.PutRef(ctx, blobs, native, content.MediaJSON, chat.ProviderKindMessage)
	if err != nil {
		return provider.Output{}, err
	}
	return provider.Output{
		Entries: []core.EntryInput{{Kind: core.EntryMessage, Role: core.RoleAssistant, Content: ref,
			TokenEstimate: provider.Estimate(native), Preview: provider.Preview(text)}},
		Finish:     "stop",
		ResponseID: fmt.Sprintf("resp-%d", n),
		Usage:      core.Usage{InputTokens: 10, OutputTokens: 2},
	}, nil
}

// callClientTool is the input the fake model answers with a call to the
// client tool "lookup" (call id "call_lookup").
const callClientTool = "use the client tool"

func clientToolCall(ctx context.Context, blobs blob.Store) (provider.Output, error) {
	args, err := blob.PutRef(ctx, blobs, []byte(`{"number":7}`), content.MediaJSON, "")
	if err != nil {
		return provider.Output{}, err
	}
	call := core.ToolCall{CallID: "call_lookup", Name: "lookup", Arguments: args}
	return provider.Output{
		Entries: []core.EntryInput{{Kind: core.EntryToolCall, Content: args, CallID: call.CallID, ToolName: call.Name,
			TokenEstimate: provider.Estimate([]byte(`{"number":7}`))}},
		ToolCalls: []core.ToolCall{call}, Finish: "tool_calls", Usage: core.Usage{InputTokens: 10, OutputTokens: 2},
	}, nil
}

func lastUserText(ctx context.Context, blobs blob.Store, entries []core.Entry) (string, error) {
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Kind == core.EntryMessage && e.Role == core.RoleUser {
			data, err := blobs.Get(ctx, e.Content.Digest)
			return string(data), err
		}
	}
	return "", errors.New("fake model: no user message in the request")
}

// waitArrived waits for call n to reach the model.
func (m *fakeModel) waitArrived(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case got := <-m.arrived:
			if got == n {
				return
			}
		case <-deadline:
			t.Fatalf("model call %d never arrived", n)
		}
	}
}

// releaseOne lets one held call answer.
func (m *fakeModel) releaseOne(t *testing.T) {
	t.Helper()
	select {
	case m.release <- struct{}{}:
	case <-time.After(waitLimit):
		t.Fatal("no held model call to release")
	}
}

// faultyBlobs wraps a blob store; once failPuts is set, every Put fails with
// an error carrying an internal detail that must never reach a client.
type faultyBlobs struct {
	blob.Store
	failPuts atomic.Bool
	failGets atomic.Bool
}

func (b *faultyBlobs) Get(ctx context.Context, d content.Digest) ([]byte, error) {
	if b.failGets.Load() {
		return nil, errors.New("read /var/lib/cairn/objects/" + d.Hex() + " failed: " + secretDetail)
	}
	return b.Store.Get(ctx, d)
}

const secretDetail = "SECRET-DETAIL"

func (b *faultyBlobs) Put(ctx context.Context, data []byte) (content.Digest, error) {
	if b.failPuts.Load() {
		return content.Digest{}, errors.New("write /var/lib/cairn/objects/tmp-81 failed: " + secretDetail)
	}
	return b.Store.Put(ctx, data)
}

// observedHost reports every Changed call (which the server makes right
// before a long poll starts waiting) on a channel.
type observedHost struct {
	*local.Host
	changed chan string
}

func (h observedHost) Changed(ctx context.Context, sessionID string) (int64, <-chan struct{}, error) {
	head, ch, err := h.Host.Changed(ctx, sessionID)
	select {
	case h.changed <- sessionID:
	default:
	}
	return head, ch, err
}

// env is a JSON-RPC server over a real local host on memory stores.
type env struct {
	c       *api.Client
	url     string
	model   *fakeModel
	blobs   *faultyBlobs
	log     *store.Memory
	changed chan string
	logs    *testenv.Buffer
}

func newEnv(t testing.TB) *env { return newEnvWith(t, api.ServerOptions{}) }

// newEnvWith is newEnv with server options (APIKinds and Logger are set here).
func newEnvWith(t testing.TB, opt api.ServerOptions) *env {
	t.Helper()
	blobs := &faultyBlobs{Store: blob.NewMemory()}
	log := store.NewMemory(blobs)
	model := newFakeModel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	host := local.New(local.Options{
		Log:      log,
		Blobs:    blobs,
		Executor: &runtime.Executor{Blobs: blobs, Adapters: map[string]provider.Adapter{core.APIChatCompletions: model}, Tools: vfsTools(t), Files: log},
		Logger:   quiet,
	})
	if err := host.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	logs := &testenv.Buffer{}
	oh := observedHost{Host: host, changed: make(chan string, 64)}
	opt.APIKinds = []string{core.APIChatCompletions}
	opt.Logger = slog.New(slog.NewTextHandler(logs, nil))
	srv := httptest.NewServer(api.NewServer(oh, opt).Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(host.Close) // runs first: held model calls end with the host
	return &env{c: api.NewClient(srv.URL, nil), url: srv.URL + "/rpc", model: model, blobs: blobs, log: log, changed: oh.changed, logs: logs}
}

func testModel() core.ModelSelection {
	return core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "fake-1"}
}

func textInput(s string) []api.InputPart { return []api.InputPart{{Type: "text", Text: s}} }

// create opens a session and fails the test on error.
func (e *env) create(t *testing.T, p api.CreateSessionParams) string {
	t.Helper()
	if p.Model == (core.ModelSelection{}) {
		p.Model = testModel()
	}
	got, err := e.c.CreateSession(context.Background(), p)
	if err != nil {
		t.Fatalf("session/create: %v", err)
	}
	return got.SessionID
}

func (e *env) read(t *testing.T, sessionID string) api.SessionReadResult {
	t.Helper()
	got, err := e.c.ReadSession(context.Background(), sessionID)
	if err != nil {
		t.Fatalf("session/read %s: %v", sessionID, err)
	}
	return got
}

func (e *env) context(t *testing.T, sessionID string) api.ContextReadResult {
	t.Helper()
	got, err := e.c.ReadContext(context.Background(), sessionID)
	if err != nil {
		t.Fatalf("session/context/read %s: %v", sessionID, err)
	}
	return got
}

func (e *env) start(t *testing.T, sessionID, text string) api.RunStartResult {
	t.Helper()
	got, err := e.c.StartRun(context.Background(), api.RunStartParams{SessionID: sessionID, Input: textInput(text)})
	if err != nil {
		t.Fatalf("session/runs/start: %v", err)
	}
	return got
}

// events reads a session's whole log.
func (e *env) events(t *testing.T, sessionID string) []api.EventView {
	t.Helper()
	got, err := e.c.ReadEvents(context.Background(), api.EventsReadParams{SessionID: sessionID, Limit: 1000})
	if err != nil {
		t.Fatalf("session/events/read: %v", err)
	}
	return got.Events
}

// waitStatus polls session/runs/read until the run has the given status.
func (e *env) waitStatus(t *testing.T, sessionID, runID, status string) api.RunReadResult {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		got, err := e.c.ReadRun(context.Background(), sessionID, runID)
		if err != nil {
			t.Fatalf("session/runs/read: %v", err)
		}
		if got.Status == status {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s, want %s", runID, got.Status, status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// snapshot is what a rejected call must leave as it was.
type snapshot struct {
	Session api.SessionReadResult
	Context api.ContextReadResult
}

func (e *env) snapshot(t *testing.T, sessionID string) snapshot {
	t.Helper()
	return snapshot{Session: e.read(t, sessionID), Context: e.context(t, sessionID)}
}

// rejected checks that call fails with a JSON-RPC error of kind and that the
// session's head, context revision, runs and context are as before.
func (e *env) rejected(t *testing.T, sessionID, kind string, call func() error) *api.Error {
	t.Helper()
	before := e.snapshot(t, sessionID)
	rpcErr := wantKind(t, call(), kind)
	after := e.snapshot(t, sessionID)
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("a rejected call (%s) changed the session:\nbefore %+v\nafter  %+v", kind, before, after)
	}
	return rpcErr
}

// wantKind checks that err is a JSON-RPC error whose data.kind is kind.
func wantKind(t *testing.T, err error, kind string) *api.Error {
	t.Helper()
	var rpcErr *api.Error
	if !errors.As(err, &rpcErr) {
		t.Fatalf("error %v (%T), want a JSON-RPC error of kind %s", err, err, kind)
	}
	if rpcErr.Kind() != kind {
		t.Fatalf("error kind %q (%s), want %s", rpcErr.Kind(), rpcErr.Message, kind)
	}
	return rpcErr
}

// post sends a raw body to /rpc and returns the status, the Content-Type and the body.
func (e *env) post(t *testing.T, body string) (int, string, []byte) {
	t.Helper()
	resp, err := http.Post(e.url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), data
}

// postOne sends a raw body that must get one JSON-RPC response (HTTP 200).
func (e *env) postOne(t *testing.T, body string) api.Response {
	t.Helper()
	status, ctype, data := e.post(t, body)
	if status != http.StatusOK || !strings.HasPrefix(ctype, "application/json") {
		t.Fatalf("HTTP %d (%s), want 200 with JSON: %s", status, ctype, data)
	}
	var out api.Response
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("response is not one JSON-RPC response: %v: %s", err, data)
	}
	if out.JSONRPC != "2.0" {
		t.Fatalf("response jsonrpc %q: %s", out.JSONRPC, data)
	}
	return out
}

// vfsTools registers the vfs_* tools, as the cairn binary does.
func vfsTools(t testing.TB) *runtime.Tools {
	t.Helper()
	tools, err := runtime.NewTools(runtime.VFSTools()...)
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// Compact summarizes as "summary of N entries", or fails when compactFail is
// set; with compactGate set it first waits for the gate.
func (m *fakeModel) Compact(ctx context.Context, blobs blob.Store, req provider.CompactRequest) (provider.CompactOutput, error) {
	m.mu.Lock()
	m.compactions = append(m.compactions, req)
	fail, gate := m.compactFail, m.compactGate
	m.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return provider.CompactOutput{}, ctx.Err()
		}
	}
	if fail {
		return provider.CompactOutput{Failure: &core.Failure{Kind: core.FailureCompaction, Message: "no usable summary"}}, nil
	}
	text := fmt.Sprintf("summary of %d entries", len(req.Entries))
	ref, err := blob.PutRef(ctx, blobs, []byte(text), content.MediaText, "")
	if err != nil {
		return provider.CompactOutput{}, err
	}
	return provider.CompactOutput{Entries: []core.EntryInput{{Kind: core.EntrySummary, Content: ref,
		TokenEstimate: provider.Estimate([]byte(text)), Preview: text, Origin: "compaction"}}}, nil
}

// refp is a ref a result gave, as a param.
func refp(r content.ContentRef) *api.RefParam {
	p := api.RefOf(r)
	return &p
}
