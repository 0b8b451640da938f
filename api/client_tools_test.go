package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store"
)

// chatScript is a Chat Completions server that answers request n with
// replies[n] (the last one after that) and keeps the request bodies.
type chatScript struct {
	mu      sync.Mutex
	replies []string
	bodies  []string
}

func (s *chatScript) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, string(body))
	reply := s.replies[min(n, len(s.replies)-1)]
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, reply)
}

func (s *chatScript) body(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[n]
}

func chatReply(message string) string {
	return `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":` + message +
		`,"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`
}

// newChatEnv is a server over a local host whose model is script.
func newChatEnv(t *testing.T, script *chatScript) *api.Client {
	t.Helper()
	srv := httptest.NewServer(script)
	t.Cleanup(srv.Close)
	blobs := blob.NewMemory()
	log := store.NewMemory(blobs)
	adapters := map[string]provider.Adapter{core.APIChatCompletions: chat.New(endpoint.Static{"fake": {BaseURL: srv.URL}}, srv.Client())}
	host := local.New(local.Options{Log: log, Blobs: blobs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Executor: &runtime.Executor{Blobs: blobs, Adapters: adapters, Tools: vfsTools(t), Files: log}})
	if err := host.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	rpc := httptest.NewServer(api.NewServer(host, api.ServerOptions{APIKinds: []string{core.APIChatCompletions}, Tools: []string{"vfs_list_dir"}}).Handler())
	t.Cleanup(rpc.Close)
	t.Cleanup(host.Close)
	return api.NewClient(rpc.URL, nil)
}

var lookupTool = api.ClientTool{Name: "lookup", Description: "Look a ticket up by number.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"number":{"type":"integer"}},"required":["number"]}`)}

// A client tool end to end on the embedded host: defined at creation and
// shown by session/read, offered to the model, its call parked
// (awaiting_tools) and listed with its arguments while a built-in call of
// the same batch runs, answered by session/tools/submit, and both results
// sent back in the order the model called them.
func TestClientTools_AParkedCallIsAnsweredByTheClient(t *testing.T) {
	ctx := context.Background()
	script := &chatScript{replies: []string{
		chatReply(`{"role":"assistant","content":null,"tool_calls":[` +
			`{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"number\":7}"}},` +
			`{"id":"call_2","type":"function","function":{"name":"vfs_list_dir","arguments":"{\"path\":\"/\"}"}}]}`),
		chatReply(`{"role":"assistant","content":"Ticket 7 is open."}`),
	}}
	c := newChatEnv(t, script)
	created, err := c.CreateSession(ctx, api.CreateSessionParams{Model: core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "m"},
		Tools: []string{"lookup", "vfs_list_dir"}, ClientTools: []api.ClientTool{lookupTool}})
	if err != nil {
		t.Fatal(err)
	}
	id := created.SessionID
	read, err := c.ReadSession(ctx, id)
	if err != nil || len(read.ClientTools) != 1 || read.ClientTools[0].Name != "lookup" || strings.Join(read.Tools, ",") != "lookup,vfs_list_dir" {
		t.Fatalf("session/read tools %v, client tools %+v (%v)", read.Tools, read.ClientTools, err)
	}

	run, err := c.StartRun(ctx, api.RunStartParams{SessionID: id, Input: []api.InputPart{{Type: "text", Text: "What is ticket 7?"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitRunStatus(t, c, id, run.RunID, core.StatusAwaitingTools)
	if first := script.body(0); !strings.Contains(first, `"name":"lookup","description":"Look a ticket up by number."`) {
		t.Fatalf("the client tool was not offered to the model: %s", first)
	}
	pending, err := c.PendingTools(ctx, id)
	if err != nil || len(pending.Calls) != 1 {
		t.Fatalf("pending %+v (%v); want the lookup call", pending, err)
	}
	if p := pending.Calls[0]; p.RunID != run.RunID || p.CallID != "call_1" || p.Name != "lookup" || p.Arguments != `{"number":7}` {
		t.Fatalf("pending call %+v", p)
	}
	if _, err := c.SubmitTool(ctx, api.ToolSubmitParams{SessionID: id, CallID: "call_9", Output: &api.ToolOutput{Text: "?"}}); err == nil {
		t.Fatal("a result for an unknown call was taken")
	} else {
		wantKind(t, err, core.RejectUnknownCall)
	}
	if _, err := c.SubmitTool(ctx, api.ToolSubmitParams{SessionID: id, CallID: "call_1", Output: &api.ToolOutput{Text: "ticket 7: open"}}); err != nil {
		t.Fatal(err)
	}
	waitRunStatus(t, c, id, run.RunID, core.StatusCompleted)
	second := script.body(1)
	i, j := strings.Index(second, `"tool_call_id":"call_1"`), strings.Index(second, `"tool_call_id":"call_2"`)
	if i < 0 || j < 0 || i > j || !strings.Contains(second, "ticket 7: open") {
		t.Fatalf("the second request does not carry both results in call order: %s", second)
	}
	_, err = c.SubmitTool(ctx, api.ToolSubmitParams{SessionID: id, CallID: "call_1", Output: &api.ToolOutput{Text: "again"}})
	wantKind(t, err, core.RejectUnknownCall) // its run has ended
}

// Client tool definitions are checked at creation: the parameters must
// compile as a JSON Schema that refers to nothing outside itself, and a
// client tool may not take a built-in tool's name.
func TestClientTools_DefinitionsAreCheckedAtCreation(t *testing.T) {
	c := newChatEnv(t, &chatScript{replies: []string{chatReply(`{"role":"assistant","content":"hi"}`)}})
	for name, tool := range map[string]api.ClientTool{
		"not a schema":     {Name: "t", Parameters: json.RawMessage(`{"type":"no such type"}`)},
		"external ref":     {Name: "t", Parameters: json.RawMessage(`{"$ref":"http://169.254.169.254/latest/meta-data"}`)},
		"file ref":         {Name: "t", Parameters: json.RawMessage(`{"$ref":"file:///etc/passwd"}`)},
		"a built-in name":  {Name: "vfs_list_dir", Parameters: json.RawMessage(`{"type":"object"}`)},
		"not an object":    {Name: "t", Parameters: json.RawMessage(`true`)},
		"name with spaces": {Name: "a tool", Parameters: json.RawMessage(`{"type":"object"}`)},
	} {
		_, err := c.CreateSession(context.Background(), api.CreateSessionParams{Model: core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "m"},
			Tools: []string{tool.Name}, ClientTools: []api.ClientTool{tool}})
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if cwd, _ := os.Getwd(); strings.Contains(err.Error(), cwd) {
			t.Errorf("%s: the error names the server's directory: %v", name, err)
		}
		if e, ok := err.(*api.Error); !ok || e.Kind() != core.RejectInvalidConfiguration {
			t.Errorf("%s: %v, want %s", name, err, core.RejectInvalidConfiguration)
		}
	}
}

// A call that needs approval waits (awaiting_approval) and is listed by
// session/approvals/pending; a denial gives the model an error result with
// the reason; the same decision again is a no-op, the other a conflict.
func TestApprovals_ADeniedCallGivesTheModelTheReason(t *testing.T) {
	ctx := context.Background()
	script := &chatScript{replies: []string{
		chatReply(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"vfs_list_dir","arguments":"{\"path\":\"/\"}"}}]}`),
		chatReply(`{"role":"assistant","content":"Understood."}`),
	}}
	c := newChatEnv(t, script)
	created, err := c.CreateSession(ctx, api.CreateSessionParams{Model: core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "m"},
		Tools: []string{"vfs_list_dir"}, Approvals: map[string]string{"vfs_list_dir": core.ApprovalAlways}})
	if err != nil {
		t.Fatal(err)
	}
	id := created.SessionID
	if read, err := c.ReadSession(ctx, id); err != nil || read.Approvals["vfs_list_dir"] != core.ApprovalAlways {
		t.Fatalf("session/read approvals %v (%v)", read.Approvals, err)
	}
	run, err := c.StartRun(ctx, api.RunStartParams{SessionID: id, Input: []api.InputPart{{Type: "text", Text: "List the files."}}})
	if err != nil {
		t.Fatal(err)
	}
	waitRunStatus(t, c, id, run.RunID, core.StatusAwaitingApproval)
	pending, err := c.PendingApprovals(ctx, id)
	if err != nil || len(pending.Calls) != 1 || pending.Calls[0].CallID != "call_1" || pending.Calls[0].Arguments != `{"path":"/"}` {
		t.Fatalf("pending approvals %+v (%v)", pending, err)
	}
	if _, err := c.DecideApproval(ctx, api.ApprovalDecideParams{SessionID: id, CallID: "call_1", Reason: "not today"}); err != nil {
		t.Fatal(err)
	}
	waitRunStatus(t, c, id, run.RunID, core.StatusCompleted)
	if second := script.body(1); !strings.Contains(second, `"tool_call_id":"call_1","content":"The user denied this tool call: not today"`) {
		t.Fatalf("the model did not get the denial: %s", second)
	}
	_, err = c.DecideApproval(ctx, api.ApprovalDecideParams{SessionID: id, CallID: "call_1", Approve: true})
	wantKind(t, err, core.RejectUnknownCall) // its run has ended
}
