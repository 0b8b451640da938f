package runtime_test

import (
	"reflect"
	"testing"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
)

// A settled session's summary comes from its latest checkpoint's head and
// the tail after it, of either checkpoint version, and is the summary of
// the state LoadState builds; without a checkpoint, with unfinished work,
// or with a checkpoint that does not fit the log, LoadSummary says so and
// the caller loads the state.
func TestLoadSummary_IsTheLoadedStatesFromTheCheckpointHeadAlone(t *testing.T) {
	s := newScripted(t, "s1", "run_")
	s.script(3)
	evs := s.events()
	head := len(evs)
	want := replayTo(t, evs, head).Summary()
	if life, err := s.log.Session(s.ctx, s.id); err != nil || life.Unfinished() {
		t.Fatalf("the script leaves the session with unfinished work (%+v, %v); the test needs it settled", life, err)
	}
	if _, ok, err := runtime.LoadSummary(s.ctx, s.log, s.log, s.blobs, s.id); ok || err != nil {
		t.Fatalf("without a checkpoint: ok %v, %v; want the caller to load the state", ok, err)
	}
	for cut := 1; cut <= head; cut++ {
		at := replayTo(t, evs, cut)
		parts, err := core.EncodeCheckpointParts(at, nil)
		if err != nil {
			t.Fatal(err)
		}
		for version, data := range map[int][]byte{core.CheckpointVersion: encode(t, at), core.CheckpointChunkedVersion: parts.Index} {
			d, err := s.blobs.Put(s.ctx, data) // a chunked index without its chunks: the summary reads none
			if err != nil {
				t.Fatal(err)
			}
			if err := s.log.PutCheckpoint(s.ctx, s.id, int64(cut), d); err != nil {
				t.Fatal(err)
			}
			counted := &countingLog{SessionLog: s.log}
			got, ok, err := runtime.LoadSummary(s.ctx, counted, s.log, s.blobs, s.id)
			if err != nil || !ok || !reflect.DeepEqual(got, want) || counted.read != head-cut {
				t.Fatalf("cut %d, version %d: %+v, ok %v, %v, %d events read; want %+v from %d events", cut, version, got, ok, err, counted.read, want, head-cut)
			}
		}
	}

	// A checkpoint of another session, or past the head, is not used.
	for name, st := range map[string]*core.State{"another session's": replayTo(t, renamed(evs, "s2"), head)} {
		d, err := s.blobs.Put(s.ctx, encode(t, st))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := runtime.LoadSummary(s.ctx, s.log, fixedCheckpoint{seq: int64(head), d: d}, s.blobs, s.id); ok || err != nil {
			t.Fatalf("%s checkpoint: ok %v, %v; want the caller to load the state", name, ok, err)
		}
	}
	d, err := s.blobs.Put(s.ctx, encode(t, replayTo(t, evs, head)))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := runtime.LoadSummary(s.ctx, s.log, fixedCheckpoint{seq: int64(head) + 1, d: d}, s.blobs, s.id); ok || err != nil {
		t.Fatalf("a checkpoint past the head: ok %v, %v; want the caller to load the state", ok, err)
	}

	// With a run under way, the summary is not enough.
	busy := newScripted(t, "s3", "run_")
	busy.script(1)
	busy.admit(core.StartRun{AtMs: busy.tick(), RunID: "run_open", Input: busy.input("still going")})
	st := busy.drive.State()
	d, err = busy.blobs.Put(busy.ctx, encode(t, st))
	if err != nil {
		t.Fatal(err)
	}
	if err := busy.log.PutCheckpoint(busy.ctx, busy.id, st.Head, d); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := runtime.LoadSummary(busy.ctx, busy.log, busy.log, busy.blobs, busy.id); ok || err != nil {
		t.Fatalf("with a run under way: ok %v, %v; want the caller to load the state", ok, err)
	}
}

// renamed is evs with the session opened under another id.
func renamed(evs []core.Event, id string) []core.Event {
	out := append([]core.Event(nil), evs...)
	out[0].Payload = []byte(`{"sessionId":"` + id + `","config":{"model":{"providerId":"test","apiKind":"chat_completions","model":"m"},"tools":["lookup"]}}`)
	return out
}
