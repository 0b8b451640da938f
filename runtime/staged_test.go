package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// puttingBlobs counts the puts that reach the store one by one.
type puttingBlobs struct {
	blob.Store
	puts int
}

func (p *puttingBlobs) Put(ctx context.Context, data []byte) (content.Digest, error) {
	p.puts++
	return p.Store.Put(ctx, data)
}

// batchingFiles counts the batches written.
type batchingFiles struct {
	*store.Memory
	batches int
}

func (b *batchingFiles) WriteBatch(ctx context.Context, batch store.Batch) error {
	b.batches++
	return b.Memory.WriteBatch(ctx, batch)
}

// A generation writes its answer, its tool calls' arguments and its
// cache-report list (with the list's edge) as one batch, and everything
// its result names is stored when Generate returns, also when the list's
// base was collected and the batch is written a second time.
//
// Held (GenerateHeld), the generation writes nothing: the same blobs and
// edges come back as the batch for the host's append. The last list is
// taken as stored there (the session's events root it), so a base
// collected all the same fails that append instead.
func TestGenerationWritesOneBatch(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("held=%v", held), func(t *testing.T) { testGenerationWritesOneBatch(t, held) })
	}
}

func testGenerationWritesOneBatch(t *testing.T, held bool) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Looking.",`+
			`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"vfs_read_file","arguments":"{\"path\":\"/a\"}"}},`+
			`{"id":"call_2","type":"function","function":{"name":"vfs_read_file","arguments":"{\"path\":\"/b\"}"}}]},"finish_reason":"tool_calls"}],`+
			`"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`)
	}))
	defer srv.Close()
	adapters := map[string]provider.Adapter{core.APIChatCompletions: chat.New(endpoint.Static{"p": {BaseURL: srv.URL}}, srv.Client())}
	mem := blob.NewMemory()
	puts := &puttingBlobs{Store: mem}
	files := &batchingFiles{Memory: store.NewMemory(mem)}
	obs := &heardGenerations{}
	x := &runtime.Executor{Blobs: puts, Adapters: adapters, Files: files, Pieces: provider.NewPieces(1 << 20), Observer: obs}
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"}}
	defer func() {
		// The observer heard each stored answer once: its tokens, and how
		// much of its request began the last one (none before turn 1).
		if len(obs.fractions) != 3 || obs.fractions[0] != -1 || obs.fractions[1] <= 0 || obs.fractions[1] > 1 || obs.input != 15 {
			t.Errorf("the observer heard fractions %v and %d input tokens", obs.fractions, obs.input)
		}
	}()

	var entries []core.Entry
	add := func(kind, role string, ref content.ContentRef) {
		entries = append(entries, core.Entry{ID: fmt.Sprintf("e%d", len(entries)+1), Kind: kind, Role: role, Source: core.SourceUser, Content: ref})
	}
	question, err := blob.PutRef(ctx, mem, []byte("What is in /a?"), content.MediaText, "")
	if err != nil {
		t.Fatal(err)
	}
	add(core.EntryMessage, core.RoleUser, question)
	var last *content.ContentRef
	for turn := 1; turn <= 3; turn++ {
		if turn == 3 { // the list the delta would be based on is collected
			if _, ok := mem.DeleteIf(last.Digest, func(time.Time) bool { return true }); !ok {
				t.Fatal("could not delete the last list")
			}
		}
		puts.puts, files.batches = 0, 0
		w := core.GenerateWork{RunID: "r1", Turn: turn, Config: cfg, Entries: entries, Fingerprint: core.PlanFingerprint(cfg, entries), LastSegments: last}
		var res core.GenerationResult
		var writes store.Batch
		var err error
		if held {
			res, writes, err = x.GenerateHeld(ctx, "s1", w)
		} else {
			res, err = x.Generate(ctx, "s1", w)
		}
		if err != nil {
			t.Fatal(err)
		}
		if res.Cache == nil || len(res.ToolCalls) != 2 {
			t.Fatalf("turn %d: cache facts %v, %d tool calls; want facts and 2 calls", turn, res.Cache, len(res.ToolCalls))
		}
		wantBatches := map[int]int{1: 1, 2: 1, 3: 2}[turn] // turn 3's delta fails on its collected base
		if held {
			wantBatches = 0
			if len(writes.Blobs) == 0 || len(writes.Edges) != map[int]int{1: 0, 2: 1, 3: 1}[turn] {
				t.Fatalf("turn %d held %d blobs and %d edges", turn, len(writes.Blobs), len(writes.Edges))
			}
		}
		if puts.puts != 0 || files.batches != wantBatches {
			t.Fatalf("turn %d wrote %d blobs one by one and %d batches; want none and %d", turn, puts.puts, files.batches, wantBatches)
		}
		if held && turn == 3 {
			var missing *blob.MissingError
			if err := files.WriteBatch(ctx, writes); !errors.As(err, &missing) {
				t.Fatalf("turn 3: the held batch names the collected base, and writing it gave %v", err)
			}
			return
		}
		if held {
			if err := files.WriteBatch(ctx, writes); err != nil {
				t.Fatalf("turn %d: writing the held batch: %v", turn, err)
			}
		}
		named := []content.Digest{res.Cache.Segments.Digest}
		for _, e := range res.Entries {
			named = append(named, e.Content.Digest)
		}
		for _, c := range res.ToolCalls {
			named = append(named, c.Arguments.Digest)
		}
		if missing, err := mem.Missing(ctx, named); err != nil || len(missing) > 0 {
			t.Fatalf("turn %d: its result names %v, not stored (%v)", turn, missing, err)
		}
		wantDelta := turn == 2
		if (res.Cache.Segments.MediaType == core.MediaRequestSegmentDelta) != wantDelta {
			t.Fatalf("turn %d: the list is stored as %s; want a delta: %v", turn, res.Cache.Segments.MediaType, wantDelta)
		}
		last = &res.Cache.Segments
		for _, in := range res.Entries {
			add(in.Kind, in.Role, in.Content)
		}
	}
}

// heardGenerations is an Observer that keeps what Generated heard.
type heardGenerations struct {
	fractions []float64
	input     int64
}

func (h *heardGenerations) ProviderCall(runtime.ProviderCallInfo) {}
func (h *heardGenerations) ToolCall(runtime.ToolCallInfo)         {}
func (h *heardGenerations) Committed(string, []core.Event)        {}
func (h *heardGenerations) Generated(u core.Usage, f float64) {
	h.fractions = append(h.fractions, f)
	h.input += u.InputTokens
}
