package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store/sqlite"
	"github.com/cairn-agents/cairn/view"
)

// longSession writes a session of n events to a fresh SQLite store: the
// open, then keyed notes that replace each other, so the state stays small
// while the log grows (the read cost under test is the log's, not the
// context's). It ends with a checkpoint at the head, as a host writes at an
// idle boundary.
func longSession(b *testing.B, n int64) *sqlite.Store {
	b.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ref, err := blob.PutRef(ctx, st, []byte("a note of some length, as a user would write it"), content.MediaText, "")
	if err != nil {
		b.Fatal(err)
	}
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"}}
	open, _ := json.Marshal(core.SessionOpened{SessionID: "s1", Config: cfg})
	batch := []core.Proposal{{ObservedAtMs: 1, Kind: core.KindSessionOpened, Version: core.EventVersion, Payload: open}}
	for head := int64(0); head < n; {
		for int64(len(batch)) < min(1000, n-head) {
			seq := head + int64(len(batch)) + 1
			p, _ := json.Marshal(core.ContextEntriesApplied{BaseRevision: seq - 2, Entries: []core.Entry{{
				ID: core.EntryID(seq - 1), Key: "note", Kind: core.EntryMessage, Role: core.RoleUser, Source: core.SourceAPI,
				Content: ref, TokenEstimate: core.TokenEstimate{Tokens: 16, Quality: core.EstimateHeuristic}, Preview: "a note"}}})
			batch = append(batch, core.Proposal{ObservedAtMs: seq, Kind: core.KindContextEntriesApplied, Version: core.EventVersion, Payload: p, Refs: []content.Digest{ref.Digest}})
		}
		if _, err := st.Append(ctx, "s1", head, batch); err != nil {
			b.Fatal(err)
		}
		head += int64(len(batch))
		batch = batch[:0]
	}
	state, err := runtime.LoadState(ctx, st, nil, st, "s1", nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := runtime.WriteCheckpoint(ctx, st, st, state); err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkSessionRead is session/read's load: the latest checkpoint and
// the (empty) tail, at 1,000 and 100,000 events.
func BenchmarkSessionRead(b *testing.B) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, n := range []int64{1_000, 100_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			st := longSession(b, n)
			for b.Loop() {
				s, rep, err := runtime.LoadStateReport(context.Background(), st, st, st, "s1", quiet)
				if err != nil || s.Head != n || rep.CheckpointSeq != n {
					b.Fatalf("head %d, checkpoint %d: %v", s.Head, rep.CheckpointSeq, err)
				}
			}
		})
	}
}

// BenchmarkTranscriptPage reads the latest page of 50 from the head.
func BenchmarkTranscriptPage(b *testing.B) {
	for _, n := range []int64{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			st := longSession(b, n)
			for b.Loop() {
				page, err := view.ReadTranscript(context.Background(), st, st, "s1", view.TranscriptQuery{Limit: 50})
				if err != nil || len(page.Events) != 50 {
					b.Fatalf("%d events: %v", len(page.Events), err)
				}
			}
		})
	}
}
