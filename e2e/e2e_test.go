package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

const fakeKey = "sk-test-e2e-0123456789"

func fakeModel() core.ModelSelection {
	return core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "fake-model"}
}

// A session driven through `cairn serve` and the JSON-RPC client: a tool
// round (the model calls a tool the session was not granted, so the runtime
// answers "unavailable"), then a final answer that becomes the output.
func TestE2E_RunWithToolRoundThroughServe(t *testing.T) {
	fake := newFakeChat(t, fakeKey)
	fake.script(
		fakeStep{body: toolCallResponse("chatcmpl-1", "call_1", "lookup", `{"q":"acorn"}`)},
		fakeStep{body: textResponse("chatcmpl-2", "Acorn 2.0 is out.")},
	)
	dir := t.TempDir()
	srv := startServe(t, dir+"/data", writeProviderConfig(t, dir, fake), fakeKey)
	c := srv.client()
	ctx := context.Background()

	created, err := c.CreateSession(ctx, api.CreateSessionParams{Model: fakeModel(), Instructions: "Be brief.", Tools: []string{"vfs_list_dir"}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.StartRun(ctx, api.RunStartParams{SessionID: created.SessionID, Input: []api.InputPart{{Type: "text", Text: "What is new?"}}})
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != core.StatusRunning {
		t.Fatalf("status %q, want running", run.Status)
	}
	got := waitRun(t, c, created.SessionID, run.RunID)
	if got.Status != core.StatusCompleted || got.Output == nil || got.Output.VisibleText() != "Acorn 2.0 is out." {
		t.Fatalf("run = %s", mustJSON(t, got))
	}

	reqs := fake.bodies()
	if len(reqs) != 2 {
		t.Fatalf("%d provider requests, want 2", len(reqs))
	}
	if !bytes.Contains(reqs[1], []byte(`"role":"tool","tool_call_id":"call_1"`)) {
		t.Fatalf("second request lacks the tool result: %s", reqs[1])
	}
	// Prompt caching: the second request repeats the first one's messages.
	first := messagesPrefix(t, reqs[0])
	if !bytes.Contains(reqs[1], first) {
		t.Fatalf("second request does not start with the first request's messages")
	}

	cx, err := c.ReadContext(ctx, created.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range cx.Entries {
		order = append(order, e.Kind+"/"+e.Role)
	}
	want := "instructions/ message/user message/assistant tool_call/assistant tool_result/ message/assistant"
	if strings.Join(order, " ") != want {
		t.Fatalf("context order %v, want %s", order, want)
	}
	for _, e := range cx.Entries {
		if e.Kind == core.EntryToolResult && e.Content.Digest != core.ToolUnavailableRef.Digest {
			t.Fatalf("tool result %s, want the unavailable constant", e.Content.Digest)
		}
	}
}

// messagesPrefix returns the request's messages array without its closing bracket.
func messagesPrefix(t *testing.T, body []byte) []byte {
	t.Helper()
	var req struct {
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(req.Messages, []byte("]"))
}

// Bad input gets a typed error and changes nothing.
func TestE2E_RejectionsAreTypedAndChangeNothing(t *testing.T) {
	fake := newFakeChat(t, fakeKey)
	dir := t.TempDir()
	srv := startServe(t, dir+"/data", writeProviderConfig(t, dir, fake), fakeKey)
	c := srv.client()
	ctx := context.Background()
	created, err := c.CreateSession(ctx, api.CreateSessionParams{SessionID: "rejections", Model: fakeModel()})
	if err != nil {
		t.Fatal(err)
	}
	before, err := c.ReadSession(ctx, created.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	stale := before.ContextRevision + 5
	cases := []struct {
		name string
		call func() error
		kind string
	}{
		{"unknown session", func() error { _, err := c.ReadSession(ctx, "nope"); return err }, api.KindNotFound},
		{"stale revision", func() error {
			_, err := c.AppendContext(ctx, api.ContextAppendParams{SessionID: created.SessionID, Kind: "message", Text: "x", ExpectedRevision: &stale})
			return err
		}, core.RejectRevisionConflict},
		{"instructions without key", func() error {
			_, err := c.AppendContext(ctx, api.ContextAppendParams{SessionID: created.SessionID, Kind: "instructions", Text: "x"})
			return err
		}, core.RejectInvalidInput},
		{"unknown param", func() error {
			return c.Call(ctx, api.MethodSessionRead, map[string]any{"sessionId": "rejections", "bogus": 1}, nil)
		}, api.KindInvalidParams},
		{"empty input", func() error {
			_, err := c.StartRun(ctx, api.RunStartParams{SessionID: created.SessionID})
			return err
		}, api.KindInvalidParams},
		{"unknown API kind", func() error {
			_, err := c.CreateSession(ctx, api.CreateSessionParams{Model: core.ModelSelection{ProviderID: "openai", APIKind: "gemini_generate", Model: "m"}})
			return err
		}, core.RejectInvalidConfiguration},
		{"provider params a kind rejects", func() error {
			_, err := c.CreateSession(ctx, api.CreateSessionParams{Model: core.ModelSelection{ProviderID: "anthropic", APIKind: core.APIAnthropicMessages, Model: "m"},
				ProviderParams: json.RawMessage(`{"version":1,"temperature":"hot"}`)})
			return err
		}, core.RejectInvalidConfiguration},
		{"duplicate session", func() error {
			_, err := c.CreateSession(ctx, api.CreateSessionParams{SessionID: "rejections", Model: fakeModel()})
			return err
		}, core.RejectSessionExists},
		{"unknown method", func() error { return c.Call(ctx, "session/nope", map[string]any{}, nil) }, api.KindMethodNotFound},
		{"missing blob", func() error {
			_, err := c.ReadBlob(ctx, api.BlobReadParams{Ref: api.DigestRef(core.ToolCancelledRef.Digest)})
			return err
		}, ""}, // the constants are stored at start, so this one exists
	}
	for _, tc := range cases {
		err := tc.call()
		if tc.kind == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var rpcErr *api.Error
		if !errors.As(err, &rpcErr) || rpcErr.Kind() != tc.kind {
			t.Errorf("%s: error %v, want kind %s", tc.name, err, tc.kind)
		}
	}
	var conflict *api.Error
	_, err = c.AppendContext(ctx, api.ContextAppendParams{SessionID: created.SessionID, Kind: "message", Text: "x", ExpectedRevision: &stale})
	if errors.As(err, &conflict); conflict == nil || conflict.Data.Expected == nil || *conflict.Data.Expected != stale || *conflict.Data.Actual != before.ContextRevision {
		t.Fatalf("conflict error lacks expected/actual: %v", err)
	}

	// An oversized body is refused before it is parsed.
	big := bytes.Repeat([]byte("a"), 17<<20)
	resp, err := http.Post("http://"+srv.addr+"/rpc", "application/json", bytes.NewReader(append(append([]byte(`{"jsonrpc":"2.0","id":1,"method":"blobs/put","params":{"data":"`), big...), []byte(`"}}`)...)))
	if err != nil {
		t.Fatal(err)
	}
	var out api.Response
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || out.Error == nil || out.Error.Kind() != api.KindBodyTooLarge {
		t.Fatalf("oversized body: HTTP %d, %+v", resp.StatusCode, out.Error)
	}

	after, err := c.ReadSession(ctx, created.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Head != before.Head || after.ContextRevision != before.ContextRevision {
		t.Fatalf("rejections changed the session: head %d→%d, revision %d→%d", before.Head, after.Head, before.ContextRevision, after.ContextRevision)
	}
}

// Killing `cairn serve` with SIGKILL while a model call is in flight and
// starting it again finishes the run, with no event lost or written twice.
func TestE2E_SIGKILLMidRunResumesWithoutLossOrDuplicates(t *testing.T) {
	fake := newFakeChat(t, fakeKey)
	hold := make(chan struct{})
	fake.script(
		fakeStep{body: toolCallResponse("chatcmpl-1", "call_k", "vfs_list_dir", `{"path":"/"}`)},
		fakeStep{body: textResponse("chatcmpl-2", "never delivered"), release: hold}, // the killed server's request
		fakeStep{body: textResponse("chatcmpl-3", "Finished after restart.")},
	)
	dir := t.TempDir()
	cfg := writeProviderConfig(t, dir, fake)
	srv := startServe(t, dir+"/data", cfg, fakeKey)
	c := srv.client()
	ctx := context.Background()
	created, err := c.CreateSession(ctx, api.CreateSessionParams{SessionID: "crash", Model: fakeModel(), Tools: []string{"vfs_list_dir"}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.StartRun(ctx, api.RunStartParams{SessionID: created.SessionID, Input: []api.InputPart{{Type: "text", Text: "go"}}, SubmissionID: "sub-1"})
	if err != nil {
		t.Fatal(err)
	}
	waitArrived(t, fake, 1) // the second model call is in flight
	srv.kill(t)
	close(hold)

	srv2 := startServe(t, dir+"/data", cfg, fakeKey)
	c2 := srv2.client()
	got := waitRun(t, c2, created.SessionID, run.RunID)
	if got.Status != core.StatusCompleted || got.Output == nil || got.Output.VisibleText() != "Finished after restart." {
		t.Fatalf("run after restart = %s", mustJSON(t, got))
	}
	evs := allEvents(t, c2, created.SessionID)
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: the log has a gap or a duplicate", i+1, ev.Seq)
		}
	}
	n := kinds(evs)
	if n[core.KindRunAccepted] != 1 || n[core.KindRunCompleted] != 1 || n[core.KindTurnStarted] != 2 ||
		n[core.KindTurnGenerationCompleted] != 2 || n[core.KindToolCallCompleted] != 1 {
		t.Fatalf("event counts after restart: %v", n)
	}
	// Retrying the same submission after the restart starts nothing new.
	again, err := c2.StartRun(ctx, api.RunStartParams{SessionID: created.SessionID, Input: []api.InputPart{{Type: "text", Text: "go"}}, SubmissionID: "sub-1"})
	if err != nil || again.RunID != run.RunID {
		t.Fatalf("retried submission: %+v, %v", again, err)
	}
}

func waitArrived(t *testing.T, f *fakeChat, n int) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case got := <-f.arrived:
			if got >= n {
				return
			}
		case <-timeout:
			t.Fatalf("provider request %d never arrived", n)
		}
	}
}
