package local

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/vfs"
)

// callWith is an Output asking for one call of name with JSON args.
func callWith(ctx context.Context, blobs blob.Store, id, name string, args any) (provider.Output, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return provider.Output{}, err
	}
	argsRef, err := blob.PutRef(ctx, blobs, raw, content.MediaJSON, "")
	if err != nil {
		return provider.Output{}, err
	}
	native, _ := json.Marshal(map[string]string{"id": id, "name": name})
	ref, err := blob.PutRef(ctx, blobs, native, content.MediaJSON, "test.tool_call")
	if err != nil {
		return provider.Output{}, err
	}
	return provider.Output{Finish: "tool_calls",
		Entries:   []core.EntryInput{{Kind: core.EntryToolCall, Role: core.RoleAssistant, Content: ref, CallID: id, ToolName: name}},
		ToolCalls: []core.ToolCall{{CallID: id, Name: name, Arguments: argsRef}}}, nil
}

func vfsToolNames() []string {
	var names []string
	for _, d := range vfs.ToolDefs() {
		names = append(names, d.Name)
	}
	return names
}

func newFilesEnv(t *testing.T, adapter *scriptAdapter) *env {
	t.Helper()
	return newEnv(t, adapter, runtime.VFSTools()...)
}

// workspace creates workspace name holding files.
func (e *env) workspace(name string, files map[string]string) {
	e.t.Helper()
	testenv.Workspace(e.t, e.blobs, e.log, name, files)
}

// writeFile changes one file of a workspace, as another writer would.
func (e *env) writeFile(workspace, p, text string) {
	e.t.Helper()
	fs := &vfs.FS{Blobs: e.blobs, Edges: e.log, Heads: testHeads{e}, Mounts: []vfs.Mount{{Path: "/w", Workspace: workspace}}}
	if _, err := fs.WriteFile(context.Background(), "/w/"+p, []byte(text)); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) readFile(workspace, p string) string {
	e.t.Helper()
	fs := &vfs.FS{Blobs: e.blobs, Edges: e.log, Heads: testHeads{e}, Mounts: []vfs.Mount{{Path: "/w", Workspace: workspace}}}
	data, _, err := fs.ReadFile(context.Background(), "/w/"+p)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(data)
}

type testHeads struct{ e *env }

func (h testHeads) Head(ctx context.Context, name string) (content.Digest, int64, error) {
	w, err := h.e.log.Workspace(ctx, name)
	return w.Head, w.Revision, err
}

func (h testHeads) MoveHead(ctx context.Context, name string, expected int64, head content.Digest) (int64, error) {
	w, err := h.e.log.MoveHead(ctx, name, expected, head)
	return w.Revision, err
}

func (e *env) createLinked(id string, links ...core.Link) {
	e.t.Helper()
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "test", APIKind: core.APIChatCompletions, Model: "m"},
		Tools: vfsToolNames(), Links: links}
	if _, err := e.host.CreateSession(context.Background(), id, cfg, nil); err != nil {
		e.t.Fatal(err)
	}
}

// toolOutputs returns the text of every tool result in the session's context.
func (e *env) toolOutputs(sessionID string) []string {
	e.t.Helper()
	var out []string
	err := e.host.Inspect(context.Background(), sessionID, func(s *core.State) {
		for _, en := range s.Context() {
			if en.Kind == core.EntryToolResult {
				data, err := e.blobs.Get(context.Background(), en.Content.Digest)
				if err != nil {
					e.t.Error(err)
				}
				out = append(out, string(data))
			}
		}
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func TestSpec_VFSToolsWorkOnTheLinkedWorkspaceHead(t *testing.T) {
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, blobs blob.Store, req provider.Request) (provider.Output, error) {
		switch n {
		case 0:
			return callWith(ctx, blobs, "c1", "vfs_read_file", map[string]any{"path": "/work/CHANGELOG.md", "startLine": 2, "endLine": 2})
		case 1:
			return callWith(ctx, blobs, "c2", "vfs_write_file", map[string]string{"path": "/work/NOTES.md", "content": "# Notes\n- fast builds\n"})
		case 2:
			return callWith(ctx, blobs, "c3", "vfs_edit_file", map[string]string{"path": "/work/NOTES.md", "old": "fast builds", "new": "incremental builds"})
		case 3:
			return callWith(ctx, blobs, "c4", "vfs_write_file", map[string]string{"path": "/pinned/x.md", "content": "no"})
		}
		return answer(ctx, blobs, "done")
	}}
	e := newFilesEnv(t, adapter)
	e.workspace("acorn", map[string]string{"CHANGELOG.md": "Acorn 2.0\n- feat: incremental builds\n- fix: watcher\n"})
	pinned, err := vfs.Build(context.Background(), e.blobs, map[string][]byte{"x.md": []byte("pinned")}, vfs.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	pinRef, err := vfs.WriteManifest(context.Background(), e.blobs, e.log, pinned)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.log.PutSnapshot(context.Background(), pinRef.Digest); err != nil {
		t.Fatal(err)
	}
	e.createLinked("s1", core.Link{Mount: "/work", Workspace: "acorn"}, core.Link{Mount: "/pinned", Snapshot: pinRef.Digest.String()})
	run := e.waitRun("s1", e.startRun("s1", "take notes"))
	if run.Status != core.StatusCompleted {
		t.Fatalf("run %s: %+v", run.Status, run.Error)
	}
	outs := e.toolOutputs("s1")
	if len(outs) != 4 || outs[0] != "- feat: incremental builds\n" {
		t.Fatalf("tool outputs %q", outs)
	}
	if !strings.Contains(outs[3], "read-only") {
		t.Fatalf("a write to a snapshot link said %q", outs[3])
	}
	if got := e.readFile("acorn", "NOTES.md"); got != "# Notes\n- incremental builds\n" {
		t.Fatalf("NOTES.md in the workspace is %q", got)
	}
	w, err := e.log.Workspace(context.Background(), "acorn")
	if err != nil || w.Revision != 3 {
		t.Fatalf("workspace after a write and an edit: %+v %v (want revision 3)", w, err)
	}
	// The tool results record what the model saw; the failed write to the
	// snapshot is an error result, not a runtime failure.
	var statuses []string
	for _, p := range payloadsOf[core.ToolCallCompleted](t, e.events("s1"), core.KindToolCallCompleted) {
		statuses = append(statuses, p.Status)
	}
	if strings.Join(statuses, ",") != "ok,ok,ok,error" {
		t.Fatalf("call statuses %q", statuses)
	}
}

// A link mounted at "/" makes the workspace the whole session tree: the
// tools work on it (they failed at the runtime boundary before).
func TestSpec_VFSToolsWorkOnALinkMountedAtRoot(t *testing.T) {
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, blobs blob.Store, req provider.Request) (provider.Output, error) {
		switch n {
		case 0:
			return callWith(ctx, blobs, "c1", "vfs_read_file", map[string]any{"path": "/CHANGELOG.md"})
		case 1:
			return callWith(ctx, blobs, "c2", "vfs_write_file", map[string]string{"path": "/docs/NOTES.md", "content": "notes\n"})
		case 2:
			return callWith(ctx, blobs, "c3", "vfs_list_dir", map[string]string{"path": "/"})
		}
		return answer(ctx, blobs, "done")
	}}
	e := newFilesEnv(t, adapter)
	e.workspace("acorn", map[string]string{"CHANGELOG.md": "Acorn 2.0\n"})
	e.createLinked("s1", core.Link{Mount: "/", Workspace: "acorn"})
	run := e.waitRun("s1", e.startRun("s1", "take notes"))
	if run.Status != core.StatusCompleted {
		t.Fatalf("run %s: %+v", run.Status, run.Error)
	}
	if outs := e.toolOutputs("s1"); len(outs) != 3 || outs[0] != "Acorn 2.0\n" || !strings.Contains(outs[2], "docs/") {
		t.Fatalf("tool outputs %q", outs)
	}
	if got := e.readFile("acorn", "docs/NOTES.md"); got != "notes\n" {
		t.Fatalf("docs/NOTES.md in the workspace is %q", got)
	}
}

// instructionsOf returns the text of the derived instructions of a request.
func instructionsOf(t *testing.T, blobs blob.Store, req provider.Request) string {
	t.Helper()
	for _, en := range req.Entries {
		if en.Key == core.DerivedInstructionKeyPrefix+"/work" {
			data, err := blobs.Get(context.Background(), en.Content.Digest)
			if err != nil {
				t.Error(err)
			}
			return string(data)
		}
	}
	return ""
}

func TestSpec_RefreshHappensOnlyBeforeIdleSessionAdmitsNewRunWork(t *testing.T) {
	var mu sync.Mutex
	var seen []string // instructions per generation
	var e *env
	release := make(chan struct{})
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, blobs blob.Store, req provider.Request) (provider.Output, error) {
		mu.Lock()
		seen = append(seen, instructionsOf(t, blobs, req))
		mu.Unlock()
		if n == 0 {
			// The workspace changes while run 1 is in flight, and run 2 is
			// queued behind it.
			e.writeFile("acorn", ".cairn/prompts/instructions.md", "v2")
			<-release
			return callWith(ctx, blobs, "c1", "vfs_list_dir", map[string]string{"path": "/work"})
		}
		return answer(ctx, blobs, "ok")
	}}
	e = newFilesEnv(t, adapter)
	e.workspace("acorn", map[string]string{".cairn/prompts/instructions.md": "v1"})
	e.createLinked("s1", core.Link{Mount: "/work", Workspace: "acorn"})
	r1 := e.startRun("s1", "one")
	waitFor(t, func() bool { return adapter.count() == 1 })
	r2 := e.startRun("s1", "two") // queued: no refresh in front of it
	close(release)
	e.waitRun("s1", r1)
	e.waitRun("s1", r2)
	e.waitRun("s1", e.startRun("s1", "three")) // idle again: refreshed

	mu.Lock()
	defer mu.Unlock()
	// Run 1 (two turns) and run 2 use the material of run 1's boundary;
	// only run 3 sees the edit.
	if want := []string{"v1\n", "v1\n", "v1\n", "v2\n"}; strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Fatalf("instructions per request %q, want %q", seen, want)
	}
	// The instruction entry's provenance is the stored assembly report.
	var report []byte
	err := e.host.Inspect(context.Background(), "s1", func(s *core.State) {
		en, ok := s.EntryByKey(core.DerivedInstructionKeyPrefix + "/work")
		if !ok || en.ProvenanceRef == nil || en.Source != core.SourceRuntime {
			t.Fatalf("derived instructions entry %+v", en)
		}
		report, _ = e.blobs.Get(context.Background(), en.ProvenanceRef.Digest)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(report), `"path":"/work/.cairn/prompts/instructions.md"`) {
		t.Fatalf("assembly report %s", report)
	}
}

func TestSpec_UnchangedFilesRefreshNothing(t *testing.T) {
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, blobs blob.Store, req provider.Request) (provider.Output, error) {
		return answer(ctx, blobs, "ok")
	}}
	e := newFilesEnv(t, adapter)
	e.workspace("acorn", map[string]string{
		".cairn/prompts/instructions.md": "be exact",
		".cairn/skills/notes/SKILL.md":   "---\nname: notes\ndescription: Take notes.\n---\nBody.\n",
		".cairn/agents/reviewer.md":      "---\nname: reviewer\ndescription: Reviews drafts.\n---\nReview.\n",
		"unrelated.txt":                  "x",
	})
	e.createLinked("s1", core.Link{Mount: "/work", Workspace: "acorn"})
	e.waitRun("s1", e.startRun("s1", "one"))
	before := len(e.events("s1"))
	e.writeFile("acorn", "unrelated.txt", "y") // not prompt material
	e.waitRun("s1", e.startRun("s1", "two"))
	applied := 0
	for _, ev := range e.events("s1")[before:] {
		if ev.Kind == core.KindContextEntriesApplied {
			var p core.ContextEntriesApplied
			_ = json.Unmarshal(ev.Payload, &p)
			for _, en := range p.Entries {
				if en.Source == core.SourceRuntime {
					applied++
				}
			}
		}
	}
	if applied != 0 {
		t.Fatalf("an unchanged refresh applied %d entries", applied)
	}
	var keys []string
	_ = e.host.Inspect(context.Background(), "s1", func(s *core.State) {
		for _, en := range s.Context() {
			if en.Source == core.SourceRuntime {
				keys = append(keys, en.Key)
			}
		}
	})
	if strings.Join(keys, ",") != "instructions.vfs:/work,catalog.skills" { // no agent menu without agent_run
		t.Fatalf("derived keys %q", keys)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}
