package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/mcptest"
)

// MCP servers as tool sources, through `cairn serve`: a Streamable HTTP
// server with a key (in-process, built with the SDK) and a stdio one (the
// SDK's server as a program the config names). On every API kind the
// model is offered the granted tools under their wire names and its calls
// of both servers' tools come back as results, one with an image in each
// API's own form (Chat Completions takes none in a tool message: a line of
// text names it). On Chat Completions the
// HTTP server then adds a tool in the middle of a run (the run's next
// request does not change; the next run's has it), and goes down (the
// session keeps its last list, records a warning, and the run goes on).
func TestE2E_MCPToolsOnEveryAPIKind(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcptest-server")
	if out, err := exec.Command("go", "build", "-o", bin, "../internal/mcptest/mcptest-server").CombinedOutput(); err != nil {
		t.Fatalf("building the test MCP server: %v\n%s", err, out)
	}
	docsServer := mcptest.NewServer()
	var down atomic.Bool
	docsHandler := mcptest.HTTPHandler(func() *mcp.Server { return docsServer }, "docs-key")
	docs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		docsHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(docs.Close)

	chatFake := newScriptedFake(t, "/v1/chat/completions", "Authorization", "Bearer "+fakeKey,
		`{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[`+
			`{"id":"call_1","type":"function","function":{"name":"docs__echo","arguments":"{\"text\":\"hi\"}"}},`+
			`{"id":"call_2","type":"function","function":{"name":"local__echo","arguments":"{\"text\":\"there\"}"}},`+
			`{"id":"call_3","type":"function","function":{"name":"docs__mixed","arguments":"{}"}}]},"finish_reason":"tool_calls"}],`+
			`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
		textResponse("chatcmpl-2", "Done."))
	respFake := newScriptedFake(t, "/v1/responses", "Authorization", "Bearer "+fakeKey,
		`{"id":"resp_1","object":"response","status":"completed","model":"m","output":[`+
			`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"docs__echo","arguments":"{\"text\":\"hi\"}","status":"completed"},`+
			`{"type":"function_call","id":"fc_2","call_id":"call_2","name":"local__echo","arguments":"{\"text\":\"there\"}","status":"completed"},`+
			`{"type":"function_call","id":"fc_3","call_id":"call_3","name":"docs__mixed","arguments":"{}","status":"completed"}],`+
			`"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}}`,
		responsesBody)
	anthFake := newScriptedFake(t, "/v1/messages", "X-Api-Key", fakeKey,
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[`+
			`{"type":"tool_use","id":"call_1","name":"docs__echo","input":{"text":"hi"}},`+
			`{"type":"tool_use","id":"call_2","name":"local__echo","input":{"text":"there"}},`+
			`{"type":"tool_use","id":"call_3","name":"docs__mixed","input":{}}],`+
			`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`,
		anthropicBody)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	records := fmt.Sprintf(`{"providers":{
		"fake-chat":{"baseUrl":%q,"apiKeyEnv":"FAKE_CHAT_KEY","apiKinds":["chat_completions"]},
		"fake-responses":{"baseUrl":%q,"apiKeyEnv":"FAKE_CHAT_KEY","apiKinds":["openai_responses"]},
		"fake-anthropic":{"baseUrl":%q,"apiKeyEnv":"FAKE_CHAT_KEY","apiKinds":["anthropic_messages"]}},
		"mcpServers":{"docs":{"url":%q,"apiKeyEnv":"DOCS_MCP_KEY"},"local":{"command":[%q]}}}`,
		chatFake.srv.URL+"/v1", respFake.srv.URL+"/v1", anthFake.srv.URL, docs.URL, bin)
	if err := os.WriteFile(cfg, []byte(records), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServeWith(t, []string{"--data", filepath.Join(dir, "data"), "--config", cfg}, "FAKE_CHAT_KEY="+fakeKey, "DOCS_MCP_KEY=docs-key")
	c := srv.client()
	ctx := context.Background()

	// A grant of a server the config does not name is refused.
	if _, err := c.CreateSession(ctx, api.CreateSessionParams{Model: core.ModelSelection{ProviderID: "fake-chat", APIKind: core.APIChatCompletions, Model: "m"},
		Tools: []string{"mail.*"}}); err == nil {
		t.Fatal("a session granting tools of an unknown MCP server was created")
	}

	for i, tc := range []struct {
		provider, apiKind string
		fake              *scriptedFake
		// mixed is how the mixed tool's image reaches the model
		mixed string
	}{
		{"fake-chat", core.APIChatCompletions, chatFake, `{"type":"text","text":"[image/png, 4 bytes: not shown]"}`},
		{"fake-responses", core.APIOpenAIResponses, respFake, `{"type":"input_image","image_url":"data:image/png;base64,iVBORw=="}`},
		{"fake-anthropic", core.APIAnthropicMessages, anthFake, `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw=="}}`},
	} {
		created, err := c.CreateSession(ctx, api.CreateSessionParams{Model: core.ModelSelection{ProviderID: tc.provider, APIKind: tc.apiKind, Model: "m"},
			Tools: []string{"docs.*", "local.echo"}})
		if err != nil {
			t.Fatalf("%s: %v", tc.apiKind, err)
		}
		sid := created.SessionID
		if i == 0 { // the server adds a tool while the first run waits for its tools
			tc.fake.onRequest = func(n int) {
				if n == 0 {
					mcptest.AddTool(docsServer, "added")
				}
			}
		}
		run, err := c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: textInput("Echo hi and there.")})
		if err != nil {
			t.Fatalf("%s: %v", tc.apiKind, err)
		}
		if got := waitRun(t, c, sid, run.RunID); got.Status != core.StatusCompleted {
			t.Fatalf("%s: run = %s", tc.apiKind, mustJSON(t, got))
		}
		reqs := tc.fake.requests()
		if len(reqs) != 2 {
			t.Fatalf("%s: %d requests, want 2", tc.apiKind, len(reqs))
		}
		for _, want := range []string{`"docs__echo"`, `"docs__fail"`, "Echo a text back.", `"local__echo"`} {
			if !bytes.Contains(reqs[0], []byte(want)) {
				t.Fatalf("%s: the first request does not offer %s:\n%s", tc.apiKind, want, reqs[0])
			}
		}
		if bytes.Contains(reqs[0], []byte(`"local__env"`)) {
			t.Fatalf("%s: a tool the session was not granted is offered:\n%s", tc.apiKind, reqs[0])
		}
		if !bytes.Contains(reqs[1], []byte("echo: hi")) || !bytes.Contains(reqs[1], []byte("echo: there")) {
			t.Fatalf("%s: the next request does not carry both servers' results:\n%s", tc.apiKind, reqs[1])
		}
		if !bytes.Contains(reqs[1], []byte(tc.mixed)) || !bytes.Contains(reqs[1], []byte("three parts")) || !bytes.Contains(reqs[1], []byte("# Notes")) {
			t.Fatalf("%s: the result with an image is not lowered as %s:\n%s", tc.apiKind, tc.mixed, reqs[1])
		}
		if i > 0 {
			continue
		}
		if bytes.Contains(reqs[1], []byte(`"docs__added"`)) {
			t.Fatalf("the tool list changed in the middle of a run:\n%s", reqs[1])
		}
		if !bytes.Equal(toolsOf(t, reqs[0]), toolsOf(t, reqs[1])) {
			t.Fatal("the tools of one run's requests differ")
		}
		second, err := c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: textInput("And now?")})
		if err != nil {
			t.Fatal(err)
		}
		waitRun(t, c, sid, second.RunID)
		down.Store(true)
		third, err := c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: textInput("Still there?")})
		if err != nil {
			t.Fatal(err)
		}
		if got := waitRun(t, c, sid, third.RunID); got.Status != core.StatusCompleted {
			t.Fatalf("a run after the MCP server went down: %s", mustJSON(t, got))
		}
		down.Store(false)
		warning := waitEvent(t, c, sid, func(ev api.EventView) bool { return ev.Kind == core.KindSessionWarning })
		if !bytes.Contains(warning.Payload, []byte(`"source":"mcp:docs"`)) || bytes.Contains(warning.Payload, []byte(docs.URL)) {
			t.Fatalf("the warning of the server that was down: %s", warning.Payload)
		}
		reqs = tc.fake.requests()
		if len(reqs) != 4 || !bytes.Contains(reqs[2], []byte(`"docs__added"`)) {
			t.Fatalf("the next run does not offer the added tool (%d requests):\n%s", len(reqs), reqs[len(reqs)-1])
		}
		if !bytes.Equal(toolsOf(t, reqs[2]), toolsOf(t, reqs[3])) {
			t.Fatalf("a server that is down changed the session's tools:\n%s\n%s", toolsOf(t, reqs[2]), toolsOf(t, reqs[3]))
		}
	}
}

// toolsOf is the "tools" of a Chat Completions request body.
func toolsOf(t *testing.T, body []byte) []byte {
	t.Helper()
	var req struct {
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Tools) == 0 {
		t.Fatalf("a request without tools (%v):\n%s", err, body)
	}
	return req.Tools
}

// On Temporal: the worker lists the MCP server's tools in the refresh
// activity and calls them in the tool activity; the workflow keeps only
// names and the catalog's ref.
func TestE2E_TemporalMCPTool(t *testing.T) {
	docs := httptest.NewServer(mcptest.HTTPHandler(func() *mcp.Server { return mcptest.NewServer() }, ""))
	t.Cleanup(docs.Close)
	fake := newFakeChat(t, fakeKey)
	fake.script(
		fakeStep{body: toolCallResponse("chatcmpl-m1", "call_1", "docs__echo", `{"text":"hi"}`)},
		fakeStep{body: textResponse("chatcmpl-m2", "It echoed.")},
	)
	d := newTemporalDeployment(t, fake)
	addMCPServers(t, d.config, fmt.Sprintf(`{"docs":{"url":%q}}`, docs.URL))
	d.startWorker(t, "worker-1", cairnBin)
	c := d.client()
	ctx := context.Background()
	created, err := c.CreateSession(ctx, api.CreateSessionParams{Model: fakeModel(), Tools: []string{"docs.echo"}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.StartRun(ctx, api.RunStartParams{SessionID: created.SessionID, Input: textInput("Echo hi.")})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitRun(t, c, created.SessionID, run.RunID); got.Status != core.StatusCompleted {
		t.Fatalf("run = %s", mustJSON(t, got))
	}
	reqs := fake.bodies()
	if len(reqs) != 2 || !bytes.Contains(reqs[0], []byte(`"name":"docs__echo"`)) || bytes.Contains(reqs[0], []byte(`"docs__env"`)) {
		t.Fatalf("the first request does not offer docs__echo alone: %s", reqs[0])
	}
	if !bytes.Contains(reqs[1], []byte(`"tool_call_id":"call_1","content":"echo: hi"`)) {
		t.Fatalf("the second request lacks the MCP result: %s", reqs[1])
	}
}

// addMCPServers adds mcpServers to a config file.
func addMCPServers(t *testing.T, path, servers string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["mcpServers"] = json.RawMessage(servers)
	out, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}
