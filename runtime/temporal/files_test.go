package temporal_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/temporal"
	"github.com/cairn-agents/cairn/vfs"
)

func (e *env) workspace(name string, files map[string]string) {
	e.t.Helper()
	testenv.Workspace(e.t, e.st, e.st, name, files)
}

// fileText reads a workspace file at its current head.
func (e *env) fileText(workspace, p string) string {
	e.t.Helper()
	ctx := context.Background()
	w, err := e.st.Workspace(ctx, workspace)
	if err != nil {
		e.t.Fatal(err)
	}
	m, err := vfs.ReadManifest(ctx, e.st, w.Head)
	if err != nil {
		e.t.Fatal(err)
	}
	en, ok := vfs.Lookup(m, p)
	if !ok {
		e.t.Fatalf("workspace %s has no %s", workspace, p)
	}
	data, err := e.st.Get(ctx, en.Ref.Digest)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(data)
}

// On Temporal too, the workflow refreshes linked-file material before an
// idle session admits a run (through the Refresh activity), and vfs tools
// write through the workspace head inside the InvokeTool activity.
func TestTemporal_RefreshBoundaryAndVFSTools(t *testing.T) {
	var mu sync.Mutex
	var instructions []string
	adapter := &script{fn: func(ctx context.Context, n int, b blob.Store, req provider.Request) (provider.Output, error) {
		for _, en := range req.Entries {
			if en.Key == core.DerivedInstructionKeyPrefix+"/work" {
				data, err := b.Get(ctx, en.Content.Digest)
				if err != nil {
					return provider.Output{}, err
				}
				mu.Lock()
				instructions = append(instructions, string(data))
				mu.Unlock()
			}
		}
		if n == 0 {
			return callTool(ctx, b, "c1", "vfs_write_file", map[string]string{"path": "/work/.cairn/prompts/instructions.md", "content": "v2"})
		}
		return answer(ctx, b, "ok")
	}}
	e := newEnv(t, adapter, temporal.SessionArgs{}, runtime.VFSTools()...)
	e.workspace("acorn", map[string]string{".cairn/prompts/instructions.md": "v1"})
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "test", APIKind: core.APIChatCompletions, Model: "m"},
		Tools: []string{"vfs_write_file"}, Links: []core.Link{{Mount: "/work", Workspace: "acorn"}}}
	if _, err := e.gw.CreateSession(context.Background(), "s1", cfg, nil); err != nil {
		t.Fatal(err)
	}
	// Run 1 rewrites its own instructions: its second turn still uses the
	// material frozen at its boundary; run 2 is refreshed.
	if r := e.waitRun("s1", e.start("s1", "one")); r.Status != core.StatusCompleted {
		t.Fatalf("run 1 %s: %+v", r.Status, r.Error)
	}
	if got := e.fileText("acorn", ".cairn/prompts/instructions.md"); got != "v2" {
		t.Fatalf("the tool's write left %q in the workspace", got)
	}
	if r := e.waitRun("s1", e.start("s1", "two")); r.Status != core.StatusCompleted {
		t.Fatalf("run 2 %s: %+v", r.Status, r.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(instructions, "|"); got != "v1\n|v1\n|v2\n" {
		t.Fatalf("instructions per request %q", got)
	}
	var provenance *content.ContentRef
	if err := e.gw.Inspect(context.Background(), "s1", func(s *core.State) {
		if en, ok := s.EntryByKey(core.DerivedInstructionKeyPrefix + "/work"); ok {
			provenance = en.ProvenanceRef
		}
	}); err != nil {
		t.Fatal(err)
	}
	if provenance == nil {
		t.Fatal("derived instructions carry no assembly report")
	}
}

// A snapshot link whose manifest was never recorded as a snapshot is a
// typed rejection of the run (the blob exists, so the session could open).
func TestTemporal_RefreshOfAnUnrecordedSnapshotRejectsTheRun(t *testing.T) {
	e := newEnv(t, &script{fn: func(ctx context.Context, _ int, b blob.Store, _ provider.Request) (provider.Output, error) {
		return answer(ctx, b, "ok")
	}}, temporal.SessionArgs{})
	m, err := vfs.Build(context.Background(), e.st, map[string][]byte{"a.md": []byte("a")}, vfs.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := vfs.WriteManifest(context.Background(), e.st, e.st, m)
	if err != nil {
		t.Fatal(err)
	}
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "test", APIKind: core.APIChatCompletions, Model: "m"},
		Links: []core.Link{{Mount: "/ref", Snapshot: ref.Digest.String()}}}
	if _, err := e.gw.CreateSession(context.Background(), "s1", cfg, nil); err != nil {
		t.Fatal(err)
	}
	item, err := runtime.TextInput(context.Background(), e.st, "x")
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.gw.Submit(context.Background(), "s1", core.StartRun{AtMs: 1, RunID: "run_x", Input: []core.InputItem{item}})
	var rej *core.Rejection
	if !errors.As(err, &rej) || rej.Kind != core.RejectUnknownReference {
		t.Fatalf("submit: %v, want an unknown_reference rejection", err)
	}
	if n := e.kinds("s1")[core.KindRunAccepted]; n != 0 {
		t.Fatalf("%d runs accepted", n)
	}
}
