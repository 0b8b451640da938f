package local

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store/sqlite"
)

// BenchmarkReloadEvicted times the first use (an Inspect) of an evicted
// idle session on the SQLite store, after `runs` runs of a tool call and an
// answer each: its checkpoint and the (empty) tail, or with no checkpoints
// a replay of its whole log.
func BenchmarkReloadEvicted(b *testing.B) {
	for _, runs := range []int{10, 100} {
		for _, checkpoints := range []bool{true, false} {
			b.Run(fmt.Sprintf("runs=%d/checkpoints=%v", runs, checkpoints), func(b *testing.B) {
				benchReload(b, runs, checkpoints)
			})
		}
	}
}

func benchReload(b *testing.B, runs int, checkpoints bool) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, bs blob.Store, _ provider.Request) (provider.Output, error) {
		if n%2 == 0 {
			return callTools(ctx, bs, "echo")
		}
		return answer(ctx, bs, fmt.Sprintf("answer number %d, of a realistic length for a short reply", n))
	}}
	tools, err := runtime.NewTools(funcTool{"echo", func(context.Context) (runtime.ToolOutput, error) {
		return runtime.ToolOutput{Content: []byte("echoed")}, nil
	}})
	if err != nil {
		b.Fatal(err)
	}
	opt := Options{
		Log: st, Blobs: st, Checkpoints: st,
		Executor: &runtime.Executor{Blobs: st, Adapters: map[string]provider.Adapter{core.APIChatCompletions: adapter}, Tools: tools, Files: st},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if !checkpoints {
		opt.Checkpoints = nil
	}
	h := New(opt)
	h.opt.MaxIdleSessions = 0
	if err := h.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "test", APIKind: core.APIChatCompletions, Model: "m"}, Tools: []string{"echo"}}
	if _, err := h.CreateSession(ctx, "s1", cfg, nil); err != nil {
		b.Fatal(err)
	}
	for i := range runs {
		item, err := runtime.TextInput(ctx, st, fmt.Sprintf("run %d", i))
		if err != nil {
			b.Fatal(err)
		}
		adm, err := h.Submit(ctx, "s1", core.StartRun{AtMs: 1, RunID: h.NewID("run_"), Input: []core.InputItem{item}})
		if err != nil {
			b.Fatal(err)
		}
		for status := core.StatusQueued; status != core.StatusCompleted; {
			if err := h.Inspect(ctx, "s1", func(s *core.State) { status = s.Run(adm.RunID).Status }); err != nil {
				b.Fatal(err)
			}
			if status != core.StatusQueued && status != core.StatusRunning && status != core.StatusCompleted {
				b.Fatalf("run %s", status)
			}
			time.Sleep(time.Millisecond)
		}
	}
	var head int64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		h.Sweep()
		if h.IsLoaded("s1") {
			b.Fatal("not evicted")
		}
		b.StartTimer()
		if err := h.Inspect(ctx, "s1", func(s *core.State) { head = s.Head }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(head), "events")
}
