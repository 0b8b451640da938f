package local

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
)

// agentCall is an Output asking for one agent_run call.
func agentCall(ctx context.Context, blobs blob.Store, id, agent, input string) (provider.Output, error) {
	args, _ := json.Marshal(map[string]string{"agent": agent, "input": input})
	argsRef, err := blob.PutRef(ctx, blobs, args, content.MediaJSON, "")
	if err != nil {
		return provider.Output{}, err
	}
	raw, _ := json.Marshal(map[string]string{"id": id, "name": runtime.AgentRunTool})
	ref, err := blob.PutRef(ctx, blobs, raw, content.MediaJSON, "test.tool_call")
	if err != nil {
		return provider.Output{}, err
	}
	return provider.Output{Finish: "tool_calls",
		Entries:   []core.EntryInput{{Kind: core.EntryToolCall, Role: core.RoleAssistant, Content: ref, CallID: id, ToolName: runtime.AgentRunTool}},
		ToolCalls: []core.ToolCall{{CallID: id, Name: runtime.AgentRunTool, Arguments: argsRef}}}, nil
}

// agentEnv is a host whose workspace "team" holds a reviewer profile.
func agentEnv(t *testing.T, fn func(ctx context.Context, n int, blobs blob.Store, req provider.Request) (provider.Output, error)) *env {
	t.Helper()
	e := newEnv(t, &scriptAdapter{fn: fn}, append(runtime.VFSTools(), runtime.AgentRun())...)
	e.workspace("team", map[string]string{
		".cairn/agents/reviewer.md": "---\ndescription: Reviews a file.\nmodel: small\ntools: [vfs_read_file, vfs_write_file]\n---\nYou review files and answer LGTM or a list of problems.\n",
		"draft.md":                  "# Draft\n",
	})
	return e
}

func (e *env) createAgentParent(id string, tools ...string) {
	e.t.Helper()
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "test", APIKind: core.APIChatCompletions, Model: "m"},
		Tools: tools, Links: []core.Link{{Mount: "/work", Workspace: "team"}}}
	if _, err := e.host.CreateSession(context.Background(), id, cfg, nil); err != nil {
		e.t.Fatal(err)
	}
}

// A session granted agent_run sees the agent menu and runs a sub-agent:
// a child session with its parent recorded, the profile's model and
// instructions, only the tools both the profile and the parent have, and
// the child's answer as the call's result.
func TestAgents_AgentRunRunsAChildSession(t *testing.T) {
	var mu sync.Mutex
	var childReq provider.Request
	var parentFirst provider.Request
	e := agentEnv(t, func(ctx context.Context, n int, blobs blob.Store, req provider.Request) (provider.Output, error) {
		if strings.Contains(req.SessionID, ".sub-") {
			mu.Lock()
			childReq = req
			mu.Unlock()
			return answer(ctx, blobs, "LGTM")
		}
		if n == 0 {
			mu.Lock()
			parentFirst = req
			mu.Unlock()
			return agentCall(ctx, blobs, "call_r", "reviewer", "Review /work/draft.md")
		}
		return answer(ctx, blobs, "The reviewer says LGTM.")
	})
	e.createAgentParent("p", runtime.AgentRunTool, "vfs_read_file")
	runID := e.startRun("p", "Get the draft reviewed.")
	if r := e.waitRun("p", runID); r.Status != core.StatusCompleted {
		t.Fatalf("parent run %s %+v", r.Status, r.Error)
	}
	if got := e.toolOutputs("p"); !slices.Equal(got, []string{"LGTM"}) {
		t.Fatalf("the call's results %q, want the child's answer", got)
	}
	child := runtime.ChildSessionID("p", "call_r")
	var parent *core.ParentRef
	var cfg core.SessionConfig
	if err := e.host.Inspect(context.Background(), child, func(s *core.State) { parent, cfg = s.Parent, s.Config }); err != nil {
		t.Fatal(err)
	}
	if parent == nil || parent.SessionID != "p" || parent.RunID != runID || parent.CallID != "call_r" || parent.Depth != 1 {
		t.Fatalf("the child's parent %+v", parent)
	}
	if cfg.Model.Model != "small" || !slices.Equal(cfg.Tools, []string{"vfs_read_file"}) {
		t.Fatalf("the child's config %+v: want model small and only the tools its parent has too", cfg)
	}
	mu.Lock()
	defer mu.Unlock()
	if !entryTextContains(t, e, childReq.Entries, "You review files") {
		t.Fatal("the child's request lacks the profile's instructions")
	}
	if !entryTextContains(t, e, parentFirst.Entries, "- reviewer: Reviews a file.") {
		t.Fatal("the parent's request lacks the agent menu")
	}
}

// A session without agent_run gets no menu.
func TestAgents_NoMenuWithoutAgentRun(t *testing.T) {
	var mu sync.Mutex
	var req0 provider.Request
	e := agentEnv(t, func(ctx context.Context, n int, blobs blob.Store, req provider.Request) (provider.Output, error) {
		mu.Lock()
		req0 = req
		mu.Unlock()
		return answer(ctx, blobs, "ok")
	})
	e.createAgentParent("p", "vfs_read_file")
	e.waitRun("p", e.startRun("p", "hello"))
	mu.Lock()
	defer mu.Unlock()
	if entryTextContains(t, e, req0.Entries, "Agent profiles") {
		t.Fatal("a session without agent_run sees the agent menu")
	}
}

// Cancelling the parent's run cancels the child's; an unknown profile is
// an error result the model sees.
func TestAgents_CancellingTheParentCancelsTheChild(t *testing.T) {
	childStarted := make(chan struct{})
	var once sync.Once
	e := agentEnv(t, func(ctx context.Context, n int, blobs blob.Store, req provider.Request) (provider.Output, error) {
		if strings.Contains(req.SessionID, ".sub-") {
			once.Do(func() { close(childStarted) })
			<-ctx.Done() // a model call that takes until it is cancelled
			return provider.Output{}, ctx.Err()
		}
		if n == 0 {
			return agentCall(ctx, blobs, "call_x", "nobody", "x")
		}
		if n == 1 {
			return agentCall(ctx, blobs, "call_r", "reviewer", "Review /work/draft.md")
		}
		return answer(ctx, blobs, "done")
	})
	e.createAgentParent("p", runtime.AgentRunTool)
	runID := e.startRun("p", "Get the draft reviewed.")
	<-childStarted
	if got := e.toolOutputs("p"); len(got) != 1 || !strings.Contains(got[0], `No agent profile is named "nobody"; the profiles are: reviewer.`) {
		t.Fatalf("results %q", got)
	}
	if _, err := e.host.Submit(context.Background(), "p", core.CancelRun{AtMs: 9, RunID: runID}); err != nil {
		t.Fatal(err)
	}
	if r := e.waitRun("p", runID); r.Status != core.StatusCancelled {
		t.Fatalf("parent run %s", r.Status)
	}
	child := runtime.ChildSessionID("p", "call_r")
	waitFor(t, func() bool {
		cancelled := false
		_ = e.host.Inspect(context.Background(), child, func(s *core.State) {
			for _, r := range s.Runs() {
				cancelled = r.Status == core.StatusCancelled
			}
		})
		return cancelled
	})
}

// Sub-agents nest at most runtime.MaxAgentDepth deep.
func TestAgents_DepthIsBounded(t *testing.T) {
	out, err := runtime.AgentRun().Invoke(context.Background(), runtime.ToolEnv{Agent: &runtime.AgentEnv{
		Parent: core.ParentRef{SessionID: "s", RunID: "r", CallID: "c", Depth: runtime.MaxAgentDepth + 1}, Children: &Host{}}},
		json.RawMessage(`{"agent":"reviewer","input":"x"}`))
	if err != nil || !out.IsError || !strings.Contains(string(out.Content), "at most 3 deep") {
		t.Fatalf("a call beyond the depth: %+v, %v", out, err)
	}
}

// entryTextContains reports whether some text entry of entries contains s.
func entryTextContains(t *testing.T, e *env, entries []core.Entry, s string) bool {
	t.Helper()
	for _, en := range entries {
		if !content.IsText(en.Content.MediaType) {
			continue
		}
		data, err := e.blobs.Get(context.Background(), en.Content.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), s) {
			return true
		}
	}
	return false
}

// The first runtime.MaxChildren agent_run calls of a turn run at once;
// a later one gets an error result and starts nothing.
func TestAgents_ChildrenAtOnceAreBounded(t *testing.T) {
	e := agentEnv(t, func(ctx context.Context, n int, blobs blob.Store, req provider.Request) (provider.Output, error) {
		if strings.Contains(req.SessionID, ".sub-") {
			return answer(ctx, blobs, "LGTM")
		}
		if n > 0 && len(req.Entries) > 0 && req.Entries[len(req.Entries)-1].Kind == core.EntryToolResult {
			return answer(ctx, blobs, "done")
		}
		var out provider.Output
		for i := range runtime.MaxChildren + 1 {
			one, err := agentCall(ctx, blobs, "call_"+string(rune('a'+i)), "reviewer", "Review /work/draft.md")
			if err != nil {
				return out, err
			}
			out.Finish = one.Finish
			out.Entries = append(out.Entries, one.Entries...)
			out.ToolCalls = append(out.ToolCalls, one.ToolCalls...)
		}
		return out, nil
	})
	e.createAgentParent("p", runtime.AgentRunTool)
	if r := e.waitRun("p", e.startRun("p", "Get five reviews.")); r.Status != core.StatusCompleted {
		t.Fatalf("parent run %s", r.Status)
	}
	got := e.toolOutputs("p")
	if len(got) != runtime.MaxChildren+1 || !strings.Contains(got[runtime.MaxChildren], "At most 4 sub-agents run at once") {
		t.Fatalf("results %q", got)
	}
	for _, out := range got[:runtime.MaxChildren] {
		if out != "LGTM" {
			t.Fatalf("results %q: the first %d calls should have run", got, runtime.MaxChildren)
		}
	}
	if _, err := e.log.Session(context.Background(), runtime.ChildSessionID("p", "call_e")); err == nil {
		t.Fatal("the call past the bound started a child session")
	}
}
