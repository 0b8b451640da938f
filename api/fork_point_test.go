package api_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// SafeForkPoint walks back over overlapping and queued runs and pending
// compactions to the last seq none of them spans.
func TestSafeForkPoint(t *testing.T) {
	log := store.NewMemory(blob.NewMemory())
	ev := func(kind, field, id string) core.Proposal {
		return core.Proposal{Kind: kind, Version: core.EventVersion, Payload: []byte(fmt.Sprintf(`{%q:%q}`, field, id))}
	}
	run := func(kind, id string) core.Proposal { return ev(kind, "runId", id) }
	note := ev("test.note", "text", "x")
	evs := []core.Proposal{
		ev(core.KindSessionOpened, "sessionId", "s"), // 1
		run(core.KindRunAccepted, "r1"),              // 2
		run(core.KindRunAccepted, "r2"),              // 3 (queued)
		run(core.KindRunCompleted, "r1"),             // 4
		run(core.KindRunStarted, "r2"),               // 5
		note,                                         // 6
		run(core.KindRunFailed, "r2"),                // 7
		note,                                         // 8
		ev(core.KindCompactionRequested, "compactionId", "c1"), // 9
		note, // 10
		ev(core.KindCompactionCompleted, "compactionId", "c1"), // 11
		run(core.KindRunAccepted, "r3"),                        // 12 (queued behind nothing, then cancelled)
		run(core.KindRunCancelled, "r3"),                       // 13
		run(core.KindRunAccepted, "r4"),                        // 14
	}
	if _, err := log.Append(bg, "s", 0, evs); err != nil {
		t.Fatal(err)
	}
	at := func(head int64, active string, queue []string, compaction string) *core.State {
		st := core.NewState()
		st.Head, st.Active, st.Queue = head, active, queue
		if compaction != "" {
			st.Compaction = &core.PendingCompaction{ID: compaction}
		}
		return st
	}
	for _, tc := range []struct {
		st   *core.State
		want int64
	}{
		{at(6, "r2", nil, ""), 1},            // r2 spans back to 3, and r1 (ended at 4) to 2
		{at(4, "", []string{"r2"}, ""), 1},   // queued r2 alone
		{at(3, "r1", []string{"r2"}, ""), 1}, // both
		{at(10, "", nil, "c1"), 8},           // a pending compaction
		{at(14, "r4", nil, ""), 13},          // a cancelled queued run has ended
		{at(8, "", nil, ""), 8},              // nothing open: the point itself
	} {
		got, err := api.SafeForkPoint(bg, log, "s", tc.st)
		if err != nil || got != tc.want {
			t.Fatalf("safe point at %d (active %q, queued %v, compaction %v) = %d, %v; want %d",
				tc.st.Head, tc.st.Active, tc.st.Queue, tc.st.Compaction, got, err, tc.want)
		}
	}
	// A gap in the range it reads is history_incomplete, never a guess.
	gappy := &gapLog{SessionLog: log, drop: 5}
	if _, err := api.SafeForkPoint(bg, gappy, "s", at(6, "r2", nil, "")); !errors.Is(err, runtime.ErrHistoryIncomplete) {
		t.Fatalf("safe point over a gap: %v", err)
	}
}

// gapLog loses one event from backward reads.
type gapLog struct {
	store.SessionLog
	drop int64
}

func (l *gapLog) ReadBefore(ctx context.Context, id string, before int64, limit int) ([]core.Event, error) {
	evs, err := l.SessionLog.ReadBefore(ctx, id, before, limit)
	out := evs[:0:0]
	for _, ev := range evs {
		if ev.Seq != l.drop {
			out = append(out, ev)
		}
	}
	return out, err
}
