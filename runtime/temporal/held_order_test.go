package temporal_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/temporal"
)

// Commands held behind a pending compaction are admitted in the order they
// arrived, each as if it had arrived then: every edit expects the revision
// the one before it leaves, and every one lands.
func TestTemporal_HeldCommandsAreAdmittedInArrivalOrder(t *testing.T) {
	s := &script{fn: func(ctx context.Context, _ int, b blob.Store, _ provider.Request) (provider.Output, error) {
		return answer(ctx, b, "ok")
	}}
	gate := make(chan struct{})
	e := newEnvWith(t, compactor{s, gate}, temporal.SessionArgs{})
	e.create("s1")
	if r := e.waitRun("s1", e.start("s1", "one")); r.Status != core.StatusCompleted {
		t.Fatalf("run 1 %s", r.Status)
	}
	ctx := context.Background()
	st, err := e.gw.Status(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	revision := st.ContextRevision
	if _, err := e.gw.Submit(ctx, "s1", core.RequestCompaction{AtMs: 1, CompactionID: "k1"}); err != nil {
		t.Fatal(err)
	}
	const n = 5
	type outcome struct {
		adm core.Admission
		err error
	}
	out := make([]chan outcome, n)
	for i := range n {
		out[i] = make(chan outcome, 1)
		item, err := runtime.TextInput(ctx, e.st, fmt.Sprintf("edit %d", i))
		if err != nil {
			t.Fatal(err)
		}
		expected := revision + 1 + int64(i) // the compaction moves it once, each edit once more
		cmd := core.AppendContext{AtMs: 2, ExpectedRevision: &expected, Entries: []core.EntryInput{{Kind: core.EntryMessage, Role: core.RoleUser,
			Content: item.Content, TokenEstimate: item.TokenEstimate, Preview: item.Preview}}}
		go func() {
			adm, err := e.gw.Submit(ctx, "s1", cmd)
			out[i] <- outcome{adm, err}
		}()
		time.Sleep(time.Second) // so its handler starts before the next one arrives, also on a loaded machine
	}
	close(gate)
	for i := range n {
		select {
		case o := <-out[i]:
			if want := revision + 2 + int64(i); o.err != nil || o.adm.Revision != want {
				t.Errorf("edit %d: revision %d, %v; want %d", i, o.adm.Revision, o.err, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("edit %d was never decided", i)
		}
	}
}

// A retried keyed edit that changes nothing appends nothing on Temporal too.
func TestTemporal_AnIdenticalKeyedEditIsANoOp(t *testing.T) {
	s := &script{fn: func(ctx context.Context, _ int, b blob.Store, _ provider.Request) (provider.Output, error) {
		return answer(ctx, b, "ok")
	}}
	e := newEnv(t, s, temporal.SessionArgs{})
	e.create("s1")
	ctx := context.Background()
	item, err := runtime.TextInput(ctx, e.st, "remember acorns")
	if err != nil {
		t.Fatal(err)
	}
	cmd := core.AppendContext{AtMs: 1, Entries: []core.EntryInput{{Key: "note", Kind: core.EntryMessage, Role: core.RoleUser,
		Content: item.Content, TokenEstimate: item.TokenEstimate, Preview: item.Preview, Origin: "api"}}}
	first, err := e.gw.Submit(ctx, "s1", cmd)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.gw.Submit(ctx, "s1", cmd)
	if err != nil || !again.Duplicate || again.Revision != first.Revision || again.EntryIDs[0] != first.EntryIDs[0] {
		t.Fatalf("first %+v; again %+v, %v", first, again, err)
	}
	if n := e.kinds("s1")[core.KindContextEntriesApplied]; n != 1 {
		t.Fatalf("%d context.entries_applied events, want 1", n)
	}
}
