package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store/sqlite"
)

// notedModel answers every request at once with the same short native
// Chat Completions message, as the end-to-end benchmark's fake does.
type notedModel struct{}

func (notedModel) Generate(ctx context.Context, blobs blob.Store, _ provider.Request) (provider.Output, error) {
	native := []byte(`{"role":"assistant","content":"Noted."}`)
	ref, err := blob.PutRef(ctx, blobs, native, content.MediaJSON, chat.ProviderKindMessage)
	if err != nil {
		return provider.Output{}, err
	}
	return provider.Output{Finish: "stop", Entries: []core.EntryInput{{Kind: core.EntryMessage, Role: core.RoleAssistant, Content: ref,
		TokenEstimate: provider.Estimate(native), Preview: "Noted."}}}, nil
}

// benchHost is a local host over st serving the API over HTTP.
func benchHost(b *testing.B, st *sqlite.Store, checkpoints bool) (*local.Host, *api.Client) {
	b.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	opt := local.Options{Log: st, Blobs: st, Checkpoints: st, Logger: quiet,
		Executor: &runtime.Executor{Blobs: st, Adapters: map[string]provider.Adapter{core.APIChatCompletions: notedModel{}}, Files: st}}
	if !checkpoints {
		opt.Checkpoints = nil
	}
	h := local.New(opt)
	if err := h.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(api.NewServer(h, api.ServerOptions{APIKinds: []string{core.APIChatCompletions}, Logger: quiet}).Handler())
	b.Cleanup(func() { srv.Close(); h.Close() })
	return h, api.NewClient(srv.URL, nil)
}

// chatOf writes to a fresh SQLite store a chat of short turns with at least
// n events, and a checkpoint at its idle head, as a host leaves a session
// between turns. The chat is driven through a host without checkpoints, so
// building it costs what the turns cost, not what 1,000 checkpoints cost.
func chatOf(b *testing.B, n int64) *sqlite.Store {
	b.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	h, _ := benchHost(b, st, false)
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "m"}}
	if _, err := h.CreateSession(ctx, "chat", cfg, nil); err != nil {
		b.Fatal(err)
	}
	var head int64
	for turn := 1; head < n; turn++ {
		item, err := runtime.TextInput(ctx, st, fmt.Sprintf("Turn %d: a short message, as people write them.", turn))
		if err != nil {
			b.Fatal(err)
		}
		adm, err := h.Submit(ctx, "chat", core.StartRun{AtMs: h.NowMs(), RunID: h.NewID("run_"), Input: []core.InputItem{item}})
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, changed, err := h.Changed(ctx, "chat")
			if err != nil {
				b.Fatal(err)
			}
			var status string
			if err := h.Inspect(ctx, "chat", func(s *core.State) { status, head = s.Run(adm.RunID).Status, s.Head }); err != nil {
				b.Fatal(err)
			}
			if status == core.StatusCompleted {
				break
			}
			if status != core.StatusQueued && status != core.StatusRunning {
				b.Fatalf("turn %d ended %s", turn, status)
			}
			<-changed
		}
	}
	state, err := runtime.LoadState(ctx, st, nil, st, "chat", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("a chat of %d events, %d context entries", state.Head, state.EntryCount())
	if err := runtime.WriteCheckpoint(ctx, st, st, state); err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkSessionRead times session/read over HTTP on a chat of about 30
// and 10,000 events: "live" while the host holds the session (it has just
// been used), "stored" while it does not (the first read after a restart
// or an eviction: the checkpoint at the head and an empty tail).
//
//	go test -run '^$' -bench SessionRead ./api/
func BenchmarkSessionRead(b *testing.B) {
	for _, n := range []int64{30, 10_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			st := chatOf(b, n)
			ctx := context.Background()
			read := func(b *testing.B, c *api.Client) {
				for b.Loop() {
					got, err := c.ReadSession(ctx, "chat")
					if err != nil || got.Head < n {
						b.Fatalf("session/read: head %d, %v", got.Head, err)
					}
				}
			}
			b.Run("live", func(b *testing.B) {
				h, c := benchHost(b, st, true)
				if err := h.Inspect(ctx, "chat", func(*core.State) {}); err != nil { // a use loads it
					b.Fatal(err)
				}
				read(b, c)
			})
			b.Run("stored", func(b *testing.B) {
				_, c := benchHost(b, st, true)
				read(b, c)
			})
		})
	}
}
