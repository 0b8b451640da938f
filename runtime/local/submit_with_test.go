package local

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// batchLog is a log that appends batches (as SQLite does): it records
// the blobs that came with each append, by the append's first kind.
type batchLog struct {
	store.SessionLog
	blobs   blob.Store
	mu      sync.Mutex
	brought map[string][][]byte
}

func (l *batchLog) AppendBatch(ctx context.Context, id string, head int64, props []core.Proposal, b store.Batch) ([]core.Event, error) {
	if err := store.WriteBatch(ctx, l.blobs, l.SessionLog.(store.EdgeWriter), b); err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.brought[props[0].Kind] = b.Blobs
	l.mu.Unlock()
	return l.SessionLog.Append(ctx, id, head, props)
}

// A run's input text is stored by the append that admits the run, not
// before it; a refused run stores nothing.
func TestHost_BroughtBlobsAreStoredWithTheAdmission(t *testing.T) {
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		return answer(ctx, b, "ok")
	}}
	e := &env{t: t, blobs: blob.NewMemory(), adapter: adapter}
	e.log = store.NewMemory(e.blobs)
	log := &batchLog{SessionLog: e.log, blobs: e.blobs, brought: map[string][][]byte{}}
	e.host = New(Options{Log: log, Blobs: e.blobs,
		Executor: &runtime.Executor{Blobs: e.blobs, Adapters: map[string]provider.Adapter{core.APIChatCompletions: adapter}}})
	if err := e.host.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.host.Close)
	e.create("s1")
	ctx := context.Background()

	text := "brought along"
	item := runtime.TextItem(text)
	adm, err := e.host.SubmitWith(ctx, "s1", core.StartRun{AtMs: 1, RunID: "run_1", Input: []core.InputItem{item}}, [][]byte{[]byte(text)})
	if err != nil {
		t.Fatal(err)
	}
	if r := e.waitRun("s1", adm.RunID); r.Status != core.StatusCompleted {
		t.Fatalf("run %s", r.Status)
	}
	log.mu.Lock()
	got := log.brought[core.KindRunAccepted]
	log.mu.Unlock()
	if !slices.EqualFunc(got, [][]byte{[]byte(text)}, slices.Equal[[]byte]) {
		t.Fatalf("the append that accepted the run brought %q; want the input", got)
	}
	if missing, err := e.blobs.Missing(ctx, []content.Digest{item.Content.Digest}); err != nil || len(missing) > 0 {
		t.Fatalf("the input is not stored (%v)", err)
	}

	// A run on a closed session is refused: its text is not stored.
	if _, err := e.host.Submit(ctx, "s1", core.CloseSession{AtMs: 2}); err != nil {
		t.Fatal(err)
	}
	late := "too late"
	lateItem := runtime.TextItem(late)
	if _, err := e.host.SubmitWith(ctx, "s1", core.StartRun{AtMs: 3, RunID: "run_2", Input: []core.InputItem{lateItem}}, [][]byte{[]byte(late)}); err == nil {
		t.Fatal("a run on a closed session was admitted")
	}
	if missing, err := e.blobs.Missing(ctx, []content.Digest{lateItem.Content.Digest}); err != nil || len(missing) != 1 {
		t.Fatalf("a refused run's text was stored (%v)", err)
	}
}

// heldLog is a batchLog that also records each append's edges, and can
// lose a blob the edges name between the executor's check and the append
// (a collector removing it), which fails the append as a store would.
type heldLog struct {
	batchLog
	edges     map[string][]store.Edge
	loseEdges bool
}

func (l *heldLog) AppendBatch(ctx context.Context, id string, head int64, props []core.Proposal, b store.Batch) ([]core.Event, error) {
	l.mu.Lock()
	lose := l.loseEdges && len(b.Edges) > 0
	if !lose {
		l.edges[props[0].Kind] = b.Edges
	}
	l.mu.Unlock()
	if lose {
		return nil, &blob.MissingError{Digests: b.Edges[0].Children}
	}
	return l.batchLog.AppendBatch(ctx, id, head, props, b)
}

// directFiles counts the batches and edges the executor writes itself.
type directFiles struct {
	*store.Memory
	mu     sync.Mutex
	writes int
}

func (f *directFiles) WriteBatch(ctx context.Context, b store.Batch) error {
	f.mu.Lock()
	f.writes++
	f.mu.Unlock()
	return f.Memory.WriteBatch(ctx, b)
}

func (f *directFiles) PutEdges(ctx context.Context, parent content.Digest, children []content.Digest) error {
	f.mu.Lock()
	f.writes++
	f.mu.Unlock()
	return f.Memory.PutEdges(ctx, parent, children)
}

// On a log that appends batches, what a generation stores (its answer,
// its cache-report list and that list's edge to the last one) is written
// by the append that admits the result, and by nothing before it. When a
// blob the edge names is gone by then, the answer is admitted without the
// list, as when the executor cannot store one.
func TestHost_GenerationWritesRideWithItsResult(t *testing.T) {
	for _, lost := range []bool{false, true} {
		t.Run(fmt.Sprintf("lost=%v", lost), func(t *testing.T) {
			transport := cassetteOf(chatStop(0, "Seven pm."), chatStop(1, "A coat."))
			adapter := chat.New(endpoint.Static{"openai": {BaseURL: "https://replay.cairn.invalid/v1"}}, &http.Client{Transport: transport})
			blobs := blob.NewMemory()
			mem := store.NewMemory(blobs)
			files := &directFiles{Memory: mem}
			log := &heldLog{batchLog: batchLog{SessionLog: mem, blobs: blobs, brought: map[string][][]byte{}}, edges: map[string][]store.Edge{}}
			e := &env{t: t, blobs: blobs, log: mem}
			e.host = New(Options{Log: log, Blobs: blobs,
				Executor: &runtime.Executor{Blobs: blobs, Adapters: map[string]provider.Adapter{core.APIChatCompletions: adapter}, Files: files}})
			if err := e.host.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.host.Close)
			cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "openai", APIKind: core.APIChatCompletions, Model: "gpt-4o-mini"}}
			if _, err := e.host.CreateSession(context.Background(), "s1", cfg, nil); err != nil {
				t.Fatal(err)
			}
			e.runTo("s1", "when does the game start?", core.StatusCompleted)
			log.mu.Lock()
			log.loseEdges = lost // the second list is a delta with an edge to the first
			log.mu.Unlock()
			e.runTo("s1", "what should I wear?", core.StatusCompleted)

			done := payloadsOf[core.TurnGenerationCompleted](t, e.events("s1"), core.KindTurnGenerationCompleted)
			if len(done) != 2 || done[0].Cache == nil {
				t.Fatalf("%d generations, the first with cache facts %v", len(done), done[0].Cache)
			}
			files.mu.Lock()
			direct := files.writes
			files.mu.Unlock()
			log.mu.Lock()
			brought, edges := log.brought[core.KindTurnGenerationCompleted], log.edges[core.KindTurnGenerationCompleted]
			log.mu.Unlock()
			if direct != 0 || len(brought) < 2 {
				t.Fatalf("the executor wrote %d batches itself; the last result's append brought %d blobs", direct, len(brought))
			}
			if lost {
				if done[1].Cache != nil || len(edges) != 0 {
					t.Fatalf("with the edge's blob gone, the answer was admitted with cache facts %+v and edges %v", done[1].Cache, edges)
				}
				return
			}
			if done[1].Cache == nil || done[1].Cache.Segments.MediaType != core.MediaRequestSegmentDelta ||
				len(edges) != 1 || edges[0].Parent != done[1].Cache.Segments.Digest {
				t.Fatalf("the second list is %+v with edges %v; want a delta whose edge came with its result", done[1].Cache, edges)
			}
			if missing, err := blobs.Missing(context.Background(), []content.Digest{done[1].Cache.Segments.Digest, done[0].Cache.Segments.Digest}); err != nil || len(missing) > 0 {
				t.Fatalf("the lists are not stored: %v (%v)", missing, err)
			}
		})
	}
}
