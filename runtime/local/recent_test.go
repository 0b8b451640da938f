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

// The tail is the last recentEvents events committed, after commits of
// any size; and a tail a reader holds never changes under it, though the
// next tails are written after it in the same array.
func TestRememberKeepsTheLastEventsAndNeverChangesATailHeld(t *testing.T) {
	s := &session{}
	var seq int64
	type held struct {
		tail []core.Event
		seqs []int64
	}
	var readers []held
	for i, n := range []int{1, 5, 4, 300, 9, 3, 250, 7, 1, 1, 512, 2, 256, 6} {
		events := make([]core.Event, n)
		for j := range events {
			seq++
			events[j] = core.Event{Seq: seq, Kind: "k", Payload: []byte(fmt.Sprint(seq))}
		}
		s.remember(events)
		tail := *s.recent.Load()
		if want := min(seq, recentEvents); int64(len(tail)) != want {
			t.Fatalf("commit %d: the tail holds %d events, want %d", i, len(tail), want)
		}
		for j, ev := range tail {
			if want := seq - int64(len(tail)) + int64(j) + 1; ev.Seq != want || string(ev.Payload) != fmt.Sprint(want) {
				t.Fatalf("commit %d: tail[%d] is event %d (%s), want %d", i, j, ev.Seq, ev.Payload, want)
			}
		}
		var seqs []int64
		for _, ev := range tail {
			seqs = append(seqs, ev.Seq)
		}
		readers = append(readers, held{tail, seqs})
		for k, r := range readers {
			for j, ev := range r.tail {
				if ev.Seq != r.seqs[j] {
					t.Fatalf("after commit %d, the tail read after commit %d changed at %d: event %d, was %d", i, k, j, ev.Seq, r.seqs[j])
				}
			}
		}
	}
}
