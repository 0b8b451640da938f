package local

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// blockingCompactor answers generations with "ok" and compacts only when
// release is closed (otherwise it blocks until its context ends).
type blockingCompactor struct {
	release chan struct{}
	entered chan struct{}
}

func (a blockingCompactor) Generate(ctx context.Context, blobs blob.Store, _ provider.Request) (provider.Output, error) {
	return answer(ctx, blobs, "ok")
}

func (a blockingCompactor) Compact(ctx context.Context, blobs blob.Store, _ provider.CompactRequest) (provider.CompactOutput, error) {
	select {
	case a.entered <- struct{}{}:
	default:
	}
	select {
	case <-a.release:
	case <-ctx.Done():
		return provider.CompactOutput{}, ctx.Err()
	}
	ref, err := blob.PutRef(ctx, blobs, []byte("summary"), content.MediaText, "")
	if err != nil {
		return provider.CompactOutput{}, err
	}
	return provider.CompactOutput{Entries: []core.EntryInput{{Kind: core.EntrySummary, Content: ref, TokenEstimate: provider.Estimate([]byte("summary"))}}}, nil
}

// A compaction that was pending when the host stopped is resumed when a
// host starts again, without waiting for the next command.
func TestSpec_PendingCompactionResumesAfterRestart(t *testing.T) {
	blobs := blob.NewMemory()
	log := store.NewMemory(blobs)
	start := func(a blockingCompactor) *Host {
		h := New(Options{Log: log, Blobs: blobs, Retry: RetryPolicy{MaxAttempts: 1},
			Executor: &runtime.Executor{Blobs: blobs, Adapters: map[string]provider.Adapter{core.APIChatCompletions: a}}})
		if err := h.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return h
	}
	first := blockingCompactor{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	h := start(first)
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"},
		Compaction: &core.Compaction{Mode: core.CompactionProviderStandalone, ThresholdTokens: 1}}
	if _, err := h.CreateSession(context.Background(), "s1", cfg, nil); err != nil {
		t.Fatal(err)
	}
	item, err := runtime.TextInput(context.Background(), blobs, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Submit(context.Background(), "s1", core.StartRun{AtMs: 1, RunID: "r1", Input: []core.InputItem{item}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.entered: // the run ended and the threshold compaction started
	case <-time.After(10 * time.Second):
		t.Fatal("the threshold compaction never started")
	}
	h.Close()

	second := blockingCompactor{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	close(second.release)
	h2 := start(second)
	defer h2.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var pending bool
		if err := h2.Inspect(context.Background(), "s1", func(s *core.State) { pending = s.Compaction != nil }); err != nil {
			t.Fatal(err)
		}
		if !pending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pending compaction was not resumed after the restart")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
