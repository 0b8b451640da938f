package sqlite_test

import (
	"bytes"
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// turnOp is one store call a host made during a turn: a blob put, or an
// append at an expected head.
type turnOp struct {
	put   []byte
	head  int64
	props []core.Proposal
}

// turnRecorder is a sessionWriter that records the calls instead of making
// them, committing appends the way a store would, so the core can be driven
// outside the timed loop and the calls replayed against the store in it.
type turnRecorder struct{ ops []turnOp }

func (r *turnRecorder) Put(_ context.Context, data []byte) (content.Digest, error) {
	r.ops = append(r.ops, turnOp{put: bytes.Clone(data)})
	return content.Sum(data), nil
}

func (r *turnRecorder) Append(_ context.Context, sessionID string, head int64, props []core.Proposal) ([]core.Event, error) {
	if _, err := store.PrepareAppend(sessionID, head, props); err != nil {
		return nil, err
	}
	props = slices.Clone(props)
	r.ops = append(r.ops, turnOp{head: head, props: props})
	return store.Commit(head, props), nil
}

// BenchmarkAppendTurn replays the store calls of one short chat turn (no
// tool), as `cairn serve` makes them: the admission touch of the user's
// input, the blob puts and the appends the embedded host commits (the
// events, their roots and the session row), a request's segment index with
// its edge, and the long-poll read of a client following the session
// (session/events/read: the session row, then the events after its head).
// The session grows by one turn per op.
func BenchmarkAppendTurn(b *testing.B) {
	st := benchStore(b)
	ctx := context.Background()
	const id = "turn"
	rec := &turnRecorder{}
	x := &sessionBuilder{b: b, st: rec, id: id, d: core.NewDrive(core.NewState()), now: 1_700_000_000_000}
	instr := "You are a release editor. Answer from the changelog only."
	x.admit(core.OpenSession{AtMs: x.tick(), SessionID: id, Config: benchConfig(), Instructions: &core.EntryInput{
		Content: x.ref(instr, content.MediaText, ""), TokenEstimate: x.estimate(instr), Preview: instr}})

	var turns [][]turnOp
	n := 0
	more := func() {
		for range 64 {
			rec.ops = nil
			x.run(n, false)
			n++
			turns = append(turns, rec.ops)
		}
	}
	var head int64
	var events, appends, puts int
	replay := func(ops []turnOp, full bool) {
		from := head
		var input content.Digest
		for _, op := range ops {
			if op.props == nil {
				d, err := st.Put(ctx, op.put)
				if err != nil {
					b.Fatal(err)
				}
				puts++
				if input.IsZero() {
					input = d
					if full { // the user's input, admitted before the run starts
						if missing, err := st.Touch(ctx, []content.Digest{d}); err != nil || len(missing) > 0 {
							b.Fatalf("touch: %v %v", missing, err)
						}
					}
				}
				continue
			}
			evs, err := st.Append(ctx, id, op.head, op.props)
			if err != nil {
				b.Fatal(err)
			}
			appends++
			events += len(evs)
			head = evs[len(evs)-1].Seq
		}
		if !full {
			return
		}
		// The request's segment list: an index over one chunk, with its edge.
		seg, err := st.Put(ctx, []byte(`{"segments":[{"entries":3,"head":`+string(rune('0'+n%10))+`}],"turn":"`+input.String()+`"}`))
		if err != nil {
			b.Fatal(err)
		}
		ix, err := st.Put(ctx, []byte(`{"chunks":[{"ref":"`+seg.String()+`","count":1}]}`))
		if err != nil {
			b.Fatal(err)
		}
		if err := st.PutEdges(ctx, ix, []content.Digest{seg}); err != nil {
			b.Fatal(err)
		}
		puts += 2
		// A client's long poll: the head, then the turn's events.
		life, err := st.Session(ctx, id)
		if err != nil || life.Head != head {
			b.Fatalf("session head %d (%v), want %d", life.Head, err, head)
		}
		evs, err := st.ReadAfter(ctx, id, from, 100)
		if err != nil || int64(len(evs)) != head-from {
			b.Fatalf("read after %d: %d events (%v), want %d", from, len(evs), err, head-from)
		}
	}
	for _, op := range rec.ops { // the session's opening
		replay([]turnOp{op}, false)
	}
	events, appends, puts = 0, 0, 0
	// The process's CPU time is read around each replay: the wall clock
	// of a shared machine says more about its other tenants.
	var cpu time.Duration
	b.ReportAllocs()
	for b.Loop() {
		if len(turns) == 0 {
			b.StopTimer()
			more()
			b.StartTimer()
		}
		start := processCPU(b)
		replay(turns[0], true)
		cpu += processCPU(b) - start
		turns = turns[1:]
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
	b.ReportMetric(float64(appends)/float64(b.N), "appends/op")
	b.ReportMetric(float64(puts)/float64(b.N), "puts/op")
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
