package local

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// heldModel compacts once release is closed, and holds every generation
// until its context ends, recording the entries each request carried.
type heldModel struct {
	blockingCompactor
	mu       sync.Mutex
	requests [][]core.Entry
}

func (m *heldModel) Generate(ctx context.Context, _ blob.Store, req provider.Request) (provider.Output, error) {
	m.mu.Lock()
	m.requests = append(m.requests, req.Entries)
	m.mu.Unlock()
	<-ctx.Done()
	return provider.Output{}, ctx.Err()
}

func (m *heldModel) firstRequest() []core.Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.requests) == 0 {
		return nil
	}
	return m.requests[0]
}

// heldSetup starts a host whose session s1 has a manual compaction pending
// (its compactor waits for m.release), and returns the context revision it
// had before the compaction.
func heldSetup(t *testing.T) (*Host, *heldModel, *blob.Memory, int64) {
	t.Helper()
	ctx := context.Background()
	blobs := blob.NewMemory()
	log := store.NewMemory(blobs)
	m := &heldModel{blockingCompactor: blockingCompactor{release: make(chan struct{}), entered: make(chan struct{}, 1)}}
	h := New(Options{Log: log, Blobs: blobs, Retry: RetryPolicy{MaxAttempts: 1},
		Executor: &runtime.Executor{Blobs: blobs, Adapters: map[string]provider.Adapter{core.APIChatCompletions: m}}})
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"},
		Compaction: &core.Compaction{Mode: core.CompactionProviderStandalone}}
	if _, err := h.CreateSession(ctx, "s1", cfg, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Submit(ctx, "s1", heldEdit(t, blobs, "", "to be compacted", nil)); err != nil {
		t.Fatal(err)
	}
	var revision int64
	if err := h.Inspect(ctx, "s1", func(s *core.State) { revision = s.Revision }); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Submit(ctx, "s1", core.RequestCompaction{AtMs: 1, CompactionID: "c1"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the compaction never started")
	}
	return h, m, blobs, revision
}

func heldEdit(t *testing.T, blobs blob.Store, key, text string, expected *int64) core.AppendContext {
	t.Helper()
	ref, err := blob.PutRef(context.Background(), blobs, []byte(text), content.MediaText, "")
	if err != nil {
		t.Fatal(err)
	}
	return core.AppendContext{AtMs: 1, ExpectedRevision: expected,
		Entries: []core.EntryInput{{Kind: core.EntryMessage, Key: key, Content: ref, Preview: text, TokenEstimate: provider.Estimate([]byte(text))}}}
}

// submitHeld submits cmd in the background once the commands before it are
// held, and returns once it is held too, so arrival order is the call order.
func submitHeld(t *testing.T, h *Host, cmd core.Command, out chan<- heldOutcome, i int) {
	t.Helper()
	before := heldCount(t, h, "s1")
	go func() {
		adm, err := h.Submit(context.Background(), "s1", cmd)
		out <- heldOutcome{i, adm, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for heldCount(t, h, "s1") != before+1 {
		if time.Now().After(deadline) {
			t.Fatalf("command %d was not held behind the pending compaction", i)
		}
		time.Sleep(time.Millisecond)
	}
}

type heldOutcome struct {
	i   int
	adm core.Admission
	err error
}

func heldCount(t *testing.T, h *Host, id string) int {
	t.Helper()
	h.mu.Lock()
	s := h.sessions[id]
	h.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

func collect(t *testing.T, out <-chan heldOutcome, n int) []heldOutcome {
	t.Helper()
	got := make([]heldOutcome, n)
	for range n {
		select {
		case o := <-out:
			got[o.i] = o
		case <-time.After(10 * time.Second):
			t.Fatal("a held command was never decided")
		}
	}
	return got
}

// Edits held behind a compaction are admitted in the order they arrived:
// each expects the revision the one before it leaves, and every one lands.
func TestSpec_HeldCommandsAreAdmittedInArrivalOrder(t *testing.T) {
	h, m, blobs, revision := heldSetup(t)
	const n = 6
	out := make(chan heldOutcome, n)
	for i := range n {
		// The compaction moves the revision once; each edit once more.
		expected := revision + 1 + int64(i)
		submitHeld(t, h, heldEdit(t, blobs, "", fmt.Sprintf("edit %d", i), &expected), out, i)
	}
	close(m.release)
	for _, o := range collect(t, out, n) {
		if o.err != nil {
			t.Errorf("edit %d: %v", o.i, o.err)
		} else if o.adm.Revision != revision+2+int64(o.i) {
			t.Errorf("edit %d landed at revision %d, want %d", o.i, o.adm.Revision, revision+2+int64(o.i))
		}
	}
}

// An edit held before a run start lands before the run, which sees it; an
// edit held after the run start meets the active run and is refused with
// active_work, as it would be had no compaction been pending.
func TestSpec_HeldEditAndRunKeepTheirOrder(t *testing.T) {
	h, m, blobs, _ := heldSetup(t)
	item, err := runtime.TextInput(context.Background(), blobs, "go")
	if err != nil {
		t.Fatal(err)
	}
	before := heldEdit(t, blobs, "", "sent before the run", nil)
	out := make(chan heldOutcome, 3)
	submitHeld(t, h, before, out, 0)
	submitHeld(t, h, core.StartRun{AtMs: 1, RunID: "r1", Input: []core.InputItem{item}}, out, 1)
	submitHeld(t, h, heldEdit(t, blobs, "", "sent after the run", nil), out, 2)
	close(m.release)
	got := collect(t, out, 3)
	if got[0].err != nil {
		t.Fatalf("the edit sent before the run: %v", got[0].err)
	}
	if got[1].err != nil || got[1].adm.Status != core.StatusRunning {
		t.Fatalf("the run: status %q, %v", got[1].adm.Status, got[1].err)
	}
	var rej *core.Rejection
	if !errors.As(got[2].err, &rej) || rej.Kind != core.RejectActiveWork {
		t.Fatalf("the edit sent after the run: entries %v, %v; want %s", got[2].adm.EntryIDs, got[2].err, core.RejectActiveWork)
	}
	deadline := time.Now().Add(10 * time.Second)
	for m.firstRequest() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the run never asked the model")
		}
		time.Sleep(time.Millisecond)
	}
	id := got[0].adm.EntryIDs[0]
	if !slices.ContainsFunc(m.firstRequest(), func(e core.Entry) bool { return e.ID == id && e.Content == before.Entries[0].Content }) {
		t.Fatalf("the run's first request lacks the edit sent before it (%s)", id)
	}
}
