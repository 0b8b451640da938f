package local

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
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
