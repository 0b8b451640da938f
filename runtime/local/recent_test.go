package local

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/core"
)

// A live session answers reads of the events after any point of the tail
// it committed exactly as the log does, with the log's head; before that
// tail, past the head, for a session it does not hold, and after a failed
// append until the next commit, it leaves the read to the log.
func TestHost_RecentEventsAreTheLogsTail(t *testing.T) {
	e, flaky := newFlakyEnv(t)
	ctx := context.Background()
	for i := range 40 { // past recentEvents
		run := e.startRun("s1", fmt.Sprintf("turn %d", i))
		if r := e.waitRun("s1", run); r.Status != core.StatusCompleted {
			t.Fatalf("run %s", r.Status)
		}
	}
	life, err := e.log.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	head := life.Head
	if head <= recentEvents {
		t.Fatalf("head %d: the test wants more events than the tail keeps", head)
	}
	first := head - recentEvents + 1
	for _, after := range []int64{0, first - 2, first - 1, first, head - 9, head - 1, head, head + 1} {
		for _, limit := range []int{0, 3} {
			got, gotHead, ok := e.host.RecentEvents("s1", after, limit)
			if want := after >= first-1 && after <= head; ok != want {
				t.Fatalf("after %d: from memory %v, want %v (tail %d..%d)", after, ok, want, first, head)
			}
			if !ok {
				continue
			}
			want, err := e.log.ReadAfter(ctx, "s1", after, limit)
			if err != nil {
				t.Fatal(err)
			}
			if gotHead != head || !reflect.DeepEqual(got, want) {
				t.Fatalf("after %d, limit %d: memory gives %d events and head %d, the log %d events and head %d", after, limit, len(got), gotHead, len(want), head)
			}
			if len(got) > 0 {
				got[0].Payload[0] = 'X' // the caller's copy
			}
		}
	}
	if _, _, ok := e.host.RecentEvents("nobody", 0, 0); ok {
		t.Fatal("a session the host does not hold was read from memory")
	}

	// A failed append: the log is the authority until a commit succeeds.
	flaky.mu.Lock()
	flaky.fail = func(kinds []string) bool { return kinds[0] == core.KindTurnGenerationCompleted }
	flaky.mu.Unlock()
	run := e.startRun("s1", "fails once")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, _, ok := e.host.RecentEvents("s1", head, 0); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tail was still read from memory after an append failed")
		}
	}
	flaky.mu.Lock()
	flaky.fail = nil
	flaky.mu.Unlock()
	if r := e.waitRun("s1", run); r.Status != core.StatusCompleted {
		t.Fatalf("run %s", r.Status)
	}
	// The commit after the failure starts a new tail.
	life, err = e.log.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	evs, h, ok := e.host.RecentEvents("s1", life.Head-1, 0)
	want, _ := e.log.ReadAfter(ctx, "s1", life.Head-1, 0)
	if !ok || !reflect.DeepEqual(evs, want) || h != life.Head {
		t.Fatalf("after recovery: from memory %v, %d events, head %d; the log has %d, head %d", ok, len(evs), h, len(want), life.Head)
	}
}
