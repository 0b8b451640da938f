package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// One parallel batch per API kind: the model calls the client tool lookup
// and the built-in vfs_list_dir. The built-in call runs, the client's
// waits; for the first kind the server is SIGKILLed while it waits and
// restarted on the same data. The client's result then completes the
// batch, and the next request carries both results in the order the
// model called them.
func TestE2E_ClientAndBuiltInToolInOneBatchOnEveryAPIKind(t *testing.T) {
	chatFake := newScriptedFake(t, "/v1/chat/completions", "Authorization", "Bearer "+fakeKey,
		`{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[`+
			`{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"number\":7}"}},`+
			`{"id":"call_2","type":"function","function":{"name":"vfs_list_dir","arguments":"{\"path\":\"/\"}"}}]},"finish_reason":"tool_calls"}],`+
			`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
		textResponse("chatcmpl-2", "Ticket 7 is open."))
	respFake := newScriptedFake(t, "/v1/responses", "Authorization", "Bearer "+fakeKey,
		`{"id":"resp_1","object":"response","status":"completed","model":"m","output":[`+
			`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"lookup","arguments":"{\"number\":7}","status":"completed"},`+
			`{"type":"function_call","id":"fc_2","call_id":"call_2","name":"vfs_list_dir","arguments":"{\"path\":\"/\"}","status":"completed"}],`+
			`"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}}`,
		responsesBody)
	anthFake := newScriptedFake(t, "/v1/messages", "X-Api-Key", fakeKey,
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[`+
			`{"type":"tool_use","id":"call_1","name":"lookup","input":{"number":7}},`+
			`{"type":"tool_use","id":"call_2","name":"vfs_list_dir","input":{"path":"/"}}],`+
			`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`,
		anthropicBody)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "providers.json")
	records := fmt.Sprintf(`{"providers":{
		"fake-chat":{"baseUrl":%q,"apiKeyEnv":"FAKE_CHAT_KEY","apiKinds":["chat_completions"]},
		"fake-responses":{"baseUrl":%q,"apiKeyEnv":"FAKE_CHAT_KEY","apiKinds":["openai_responses"]},
		"fake-anthropic":{"baseUrl":%q,"apiKeyEnv":"FAKE_CHAT_KEY","apiKinds":["anthropic_messages"]}}}`,
		chatFake.srv.URL+"/v1", respFake.srv.URL+"/v1", anthFake.srv.URL)
	if err := os.WriteFile(cfg, []byte(records), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	srv := startServe(t, data, cfg, fakeKey)
	lookup := api.ClientTool{Name: "lookup", Description: "Look a ticket up.", Parameters: json.RawMessage(`{"type":"object","properties":{"number":{"type":"integer"}}}`)}
	ctx := context.Background()

	for i, tc := range []struct {
		provider, apiKind string
		fake              *scriptedFake
		// results are how the two results start in the next request, in
		// the model's order
		results [2]string
	}{
		{"fake-chat", core.APIChatCompletions, chatFake, [2]string{`"tool_call_id":"call_1"`, `"tool_call_id":"call_2"`}},
		{"fake-responses", core.APIOpenAIResponses, respFake, [2]string{`"type":"function_call_output","call_id":"call_1"`, `"type":"function_call_output","call_id":"call_2"`}},
		{"fake-anthropic", core.APIAnthropicMessages, anthFake, [2]string{`"type":"tool_result","tool_use_id":"call_1"`, `"type":"tool_result","tool_use_id":"call_2"`}},
	} {
		c := srv.client()
		created, err := c.CreateSession(ctx, api.CreateSessionParams{Model: core.ModelSelection{ProviderID: tc.provider, APIKind: tc.apiKind, Model: "m"},
			Tools: []string{"lookup", "vfs_list_dir"}, ClientTools: []api.ClientTool{lookup}})
		if err != nil {
			t.Fatalf("%s: %v", tc.apiKind, err)
		}
		sid := created.SessionID
		question := "What is ticket 7, and what files are there?"
		var run api.RunStartResult
		var chat *proc
		if i == 1 { // as a user does, with cairn chat: it shows the waiting call
			chat = startProc(t, "chat", cairnBin, []string{"chat", "--addr", srv.addr, "--session", sid, question}, nil, "[turn 1] waiting for the client: ")
			started := chat.waitLine(t, 0, "run ", 5*time.Second)
			waiting := chat.waitLine(t, 0, "[turn 1] waiting for the client: ", 5*time.Second)
			m := regexp.MustCompile(`^run (run_\S+) running$`).FindStringSubmatch(started)
			if m == nil || !strings.Contains(waiting, `"callId":"call_1","name":"lookup","arguments":"{\"number\":7}"`) {
				t.Fatalf("%s: cairn chat printed %q and %q", tc.apiKind, started, waiting)
			}
			run.RunID = m[1]
		} else if run, err = c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: textInput(question)}); err != nil {
			t.Fatalf("%s: %v", tc.apiKind, err)
		}
		waitEvent(t, c, sid, isEvent(core.KindToolCallAwaiting, "call_1"))
		waitEvent(t, c, sid, isEvent(core.KindToolCallCompleted, "call_2")) // the built-in one ran
		if i == 0 {
			srv.kill(t)
			srv = startServe(t, data, cfg, fakeKey)
			c = srv.client()
		}
		if r, err := c.ReadRun(ctx, sid, run.RunID); err != nil || r.Status != core.StatusAwaitingTools {
			t.Fatalf("%s: run while the client's call waits: %+v, %v", tc.apiKind, r, err)
		}
		if i == 2 { // as a shell script does, with the CLI
			out, err := runCairn(t, nil, "tools", "pending", "--addr", srv.addr, sid)
			var call api.PendingCall
			if err != nil || json.Unmarshal([]byte(out), &call) != nil || call.CallID != "call_1" || call.Arguments != `{"number":7}` {
				t.Fatalf("%s: cairn tools pending: %v\n%s", tc.apiKind, err, out)
			}
			if out, err := runCairn(t, nil, "tools", "submit", "--addr", srv.addr, sid, "call_1", "ticket 7: open"); err != nil || !strings.Contains(out, run.RunID) {
				t.Fatalf("%s: cairn tools submit: %v\n%s", tc.apiKind, err, out)
			}
		} else {
			pending, err := c.PendingTools(ctx, sid)
			if err != nil || len(pending.Calls) != 1 || pending.Calls[0].CallID != "call_1" || pending.Calls[0].Name != "lookup" {
				t.Fatalf("%s: pending %+v, %v", tc.apiKind, pending, err)
			}
			if _, err := c.SubmitTool(ctx, api.ToolSubmitParams{SessionID: sid, CallID: "call_1", Output: &api.ToolOutput{Text: "ticket 7: open"}}); err != nil {
				t.Fatalf("%s: submit: %v", tc.apiKind, err)
			}
		}
		if got := waitRun(t, c, sid, run.RunID); got.Status != core.StatusCompleted {
			t.Fatalf("%s: run = %s", tc.apiKind, mustJSON(t, got))
		}
		if chat != nil {
			chat.waitLine(t, 0, "run completed", 30*time.Second)
		}
		reqs := tc.fake.requests()
		if len(reqs) != 2 {
			t.Fatalf("%s: %d requests, want 2", tc.apiKind, len(reqs))
		}
		first, second := bytes.Index(reqs[1], []byte(tc.results[0])), bytes.Index(reqs[1], []byte(tc.results[1]))
		if first < 0 || second < 0 || first > second || !bytes.Contains(reqs[1], []byte("ticket 7: open")) {
			t.Fatalf("%s: the next request does not carry both results in call order:\n%s", tc.apiKind, reqs[1])
		}
		if !bytes.Contains(reqs[0], []byte(`"lookup"`)) || !bytes.Contains(reqs[0], []byte("Look a ticket up.")) {
			t.Fatalf("%s: the client tool was not offered:\n%s", tc.apiKind, reqs[0])
		}
	}
}
