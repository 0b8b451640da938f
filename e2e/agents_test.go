package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/mcptest"
	"github.com/cairn-agents/cairn/runtime"
)

// A sub-agent through `cairn serve`: the model calls agent_run with the
// reviewer profile of the linked workspace; the child session runs (its
// model call is in flight when the server is SIGKILLed and restarted on
// the same data); both resume, the child's answer is the call's result,
// and the parent's run completes. The child's session/read names its
// parent, session/list can leave it out, and the parent's transcript
// links to it.
func TestE2E_SubAgentSurvivesAKill(t *testing.T) {
	var mu sync.Mutex
	var parentBodies [][]byte
	childCalls := 0
	childSeen := make(chan struct{}, 4)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if bytes.Contains(body, []byte("You review files")) { // the child
			mu.Lock()
			childCalls++
			first := childCalls == 1
			mu.Unlock()
			childSeen <- struct{}{}
			if first { // in flight until the server dies
				<-r.Context().Done()
				return
			}
			_, _ = io.WriteString(w, textResponse("chatcmpl-c", "LGTM: the draft is fine."))
			return
		}
		mu.Lock()
		parentBodies = append(parentBodies, body)
		mu.Unlock()
		if bytes.Contains(body, []byte("LGTM: the draft is fine.")) {
			_, _ = io.WriteString(w, textResponse("chatcmpl-p2", "The reviewer approved it."))
			return
		}
		_, _ = io.WriteString(w, toolCallResponse("chatcmpl-p1", "call_1", runtime.AgentRunTool, `{"agent":"reviewer","input":"Review /work/draft.md"}`))
	}))
	t.Cleanup(fake.Close)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "providers.json")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"providers":{"fake":{"baseUrl":%q,"apiKeyEnv":"FAKE_CHAT_KEY"}}}`, fake.URL+"/v1"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	srv := startServe(t, data, cfg, fakeKey)
	c := srv.client()
	ctx := context.Background()
	sid := teamSession(t, c, map[string]string{
		".cairn/agents/reviewer.md": "---\ndescription: Reviews a file.\ntools: [vfs_read_file]\n---\nYou review files and answer LGTM or a list of problems.\n",
		"draft.md":                  "# Draft\n",
	}, runtime.AgentRunTool, "vfs_read_file")
	run, err := c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: textInput("Get /work/draft.md reviewed.")})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-childSeen:
	case <-time.After(30 * time.Second):
		t.Fatal("the sub-agent never called the model")
	}
	srv.kill(t)
	srv = startServe(t, data, cfg, fakeKey)
	c = srv.client()
	if got := waitRun(t, c, sid, run.RunID); got.Status != core.StatusCompleted || got.Output == nil || got.Output.VisibleText() != "The reviewer approved it." {
		t.Fatalf("parent run = %s", mustJSON(t, got))
	}
	mu.Lock()
	first := parentBodies[0]
	calls := childCalls
	mu.Unlock()
	if calls != 2 || !bytes.Contains(first, []byte("- reviewer: Reviews a file.")) {
		t.Fatalf("child model calls %d (want 2: before and after the kill); the parent's first request:\n%s", calls, first)
	}

	child := runtime.ChildSessionID(sid, "call_1")
	read, err := c.ReadSession(ctx, child)
	if err != nil || read.Parent == nil || read.Parent.SessionID != sid || read.Parent.RunID != run.RunID || read.Parent.CallID != "call_1" {
		t.Fatalf("the child's session/read: %s, %v", mustJSON(t, read), err)
	}
	all, err := c.ListSessions(ctx, api.SessionListParams{})
	if err != nil {
		t.Fatal(err)
	}
	top, err := c.ListSessions(ctx, api.SessionListParams{ExcludeChildren: true})
	if err != nil || len(all.Sessions) != 2 || len(top.Sessions) != 1 || top.Sessions[0].SessionID != sid {
		t.Fatalf("session/list: all %d, without children %+v (%v)", len(all.Sessions), top.Sessions, err)
	}
	tr, err := c.ReadTranscript(ctx, api.TranscriptReadParams{SessionID: sid})
	if err != nil {
		t.Fatal(err)
	}
	linked := false
	for _, ev := range tr.Events {
		if ev.Display != nil && ev.Display.ChildSessionID == child {
			linked = true
		}
	}
	if !linked {
		t.Fatalf("the parent's transcript does not link to %s", child)
	}
	out, err := runCairn(t, nil, "transcript", "--addr", srv.addr, sid)
	if err != nil || !strings.Contains(out, "sub-agent session "+child) {
		t.Fatalf("cairn transcript: %v\n%s", err, out)
	}
}

// On Temporal: the parent's agent_run starts the child as its own session
// workflow (from the worker's InvokeTool activity), the child calls an MCP
// tool through the worker, and its answer is the parent's call result.
func TestE2E_TemporalSubAgentCallsAnMCPTool(t *testing.T) {
	docs := httptest.NewServer(mcptest.HTTPHandler(func() *mcp.Server { return mcptest.NewServer() }, ""))
	t.Cleanup(docs.Close)
	fake := newFakeChat(t, fakeKey)
	fake.script(
		fakeStep{body: toolCallResponse("chatcmpl-p1", "call_1", runtime.AgentRunTool, `{"agent":"echoer","input":"Echo hi."}`)},
		fakeStep{body: toolCallResponse("chatcmpl-c1", "call_c1", "docs__echo", `{"text":"hi"}`)},
		fakeStep{body: textResponse("chatcmpl-c2", "The tool said: echo: hi")},
		fakeStep{body: textResponse("chatcmpl-p2", "The sub-agent reports: echo: hi")},
	)
	d := newTemporalDeployment(t, fake)
	addMCPServers(t, d.config, fmt.Sprintf(`{"docs":{"url":%q}}`, docs.URL))
	d.startWorker(t, "worker-1", cairnBin)
	c := d.client()
	ctx := context.Background()
	sid := teamSession(t, c, map[string]string{
		".cairn/agents/echoer.md": "---\ndescription: Echoes with the docs server.\ntools: [docs.echo]\n---\nYou echo texts with the echo tool.\n",
	}, runtime.AgentRunTool, "docs.echo")
	run, err := c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: textInput("Have the echoer echo hi.")})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitRun(t, c, sid, run.RunID); got.Status != core.StatusCompleted || got.Output == nil || got.Output.VisibleText() != "The sub-agent reports: echo: hi" {
		t.Fatalf("parent run = %s", mustJSON(t, got))
	}
	reqs := fake.bodies()
	if len(reqs) != 4 || !bytes.Contains(reqs[1], []byte(`"name":"docs__echo"`)) || !bytes.Contains(reqs[2], []byte(`"content":"echo: hi"`)) ||
		!bytes.Contains(reqs[3], []byte(`"tool_call_id":"call_1","content":"The tool said: echo: hi"`)) {
		t.Fatalf("requests:\n%s", bytes.Join(reqs, []byte("\n")))
	}
	child := runtime.ChildSessionID(sid, "call_1")
	read, err := c.ReadSession(ctx, child)
	if err != nil || read.Parent == nil || read.Parent.SessionID != sid || read.Parent.CallID != "call_1" {
		t.Fatalf("the child's session/read: %s, %v", mustJSON(t, read), err)
	}
	if types := d.activityTypes(t, child); len(types) == 0 {
		t.Fatal("the child has no workflow of its own")
	}
}

// On Temporal, the worker running both the parent's agent_run call and
// the child's model call is SIGKILLed; another worker resumes both (the
// call's retry finds the child and its run), and the parent completes
// with the child's answer. Then cancelling a parent's run cancels its
// child's.
func TestE2E_TemporalSubAgentSurvivesItsWorker(t *testing.T) {
	fake := newFakeChat(t, fakeKey)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	held := make(chan struct{}, 8)
	var mu sync.Mutex
	childCalls := 0
	fake.respondWith(func(_ int, body []byte) fakeStep {
		switch {
		case bytes.Contains(body, []byte("You review files")): // a child
			mu.Lock()
			childCalls++
			n := childCalls
			mu.Unlock()
			if n == 1 || bytes.Contains(body, []byte("Hold on")) {
				held <- struct{}{}
				return fakeStep{body: textResponse("chatcmpl-held", "late"), release: release}
			}
			return fakeStep{body: textResponse("chatcmpl-c", "LGTM")}
		case bytes.Contains(body, []byte("Hold on")): // the second run's
			return fakeStep{body: toolCallResponse("chatcmpl-h1", "call_h", runtime.AgentRunTool, `{"agent":"reviewer","input":"Hold on"}`)}
		case bytes.Contains(body, []byte(`"tool_call_id":"call_1"`)):
			return fakeStep{body: textResponse("chatcmpl-p2", "Reviewed: LGTM")}
		}
		return fakeStep{body: toolCallResponse("chatcmpl-p1", "call_1", runtime.AgentRunTool, `{"agent":"reviewer","input":"Review /work/draft.md"}`)}
	})
	d := newTemporalDeployment(t, fake, "--heartbeat-timeout", "3s")
	w1 := d.startWorker(t, "worker-1", cairnBin)
	c := d.client()
	ctx := context.Background()
	sid := teamSession(t, c, map[string]string{".cairn/agents/reviewer.md": "---\ndescription: Reviews a file.\n---\nYou review files.\n"}, runtime.AgentRunTool)
	run, err := c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: textInput("Get /work/draft.md reviewed.")})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(60 * time.Second):
		t.Fatal("the sub-agent never called the model")
	}
	w1.kill(t)
	d.startWorker(t, "worker-2", cairnBin)
	if got := waitRun(t, c, sid, run.RunID); got.Status != core.StatusCompleted || got.Output == nil || got.Output.VisibleText() != "Reviewed: LGTM" {
		t.Fatalf("parent run = %s", mustJSON(t, got))
	}

	// Cancelling the parent's run cancels the child's.
	second, err := c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: textInput("Hold on")})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(60 * time.Second):
		t.Fatal("the second sub-agent never called the model")
	}
	if _, err := c.CancelRun(ctx, sid, second.RunID); err != nil {
		t.Fatal(err)
	}
	if got := waitRun(t, c, sid, second.RunID); got.Status != core.StatusCancelled {
		t.Fatalf("cancelled parent run = %s", mustJSON(t, got))
	}
	child := runtime.ChildSessionID(sid, "call_h")
	deadline := time.Now().Add(60 * time.Second)
	for {
		read, err := c.ReadSession(ctx, child)
		if err == nil && read.ActiveRun == nil && len(read.QueuedRuns) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child's run was not cancelled: %s, %v", mustJSON(t, read), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// teamSession writes files into a new workspace "team" and creates a
// session linking it at /work with tools granted; it returns the session.
func teamSession(t *testing.T, c *api.Client, files map[string]string, tools ...string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CreateWorkspace(ctx, api.WorkspaceCreateParams{Workspace: "team"}); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if _, err := c.WriteFile(ctx, api.FileWriteParams{Workspace: "team", Path: name, Data: []byte(text)}); err != nil {
			t.Fatal(err)
		}
	}
	created, err := c.CreateSession(ctx, api.CreateSessionParams{Model: fakeModel(), Tools: tools, Links: []api.LinkParam{{Mount: "/work", Workspace: "team"}}})
	if err != nil {
		t.Fatal(err)
	}
	return created.SessionID
}
