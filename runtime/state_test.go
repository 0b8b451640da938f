package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// scripted drives one session through a real core.Drive onto a memory log,
// playing the model and the tools, the way a host does.
type scripted struct {
	t     *testing.T
	ctx   context.Context
	id    string
	runs  string // prefix of run ids, so two scripts can differ only in them
	blobs *blob.Memory
	log   *store.Memory
	drive *core.Drive
	now   int64
}

func newScripted(t *testing.T, id, runs string) *scripted {
	t.Helper()
	blobs := blob.NewMemory()
	s := &scripted{t: t, ctx: context.Background(), id: id, runs: runs, blobs: blobs, log: store.NewMemory(blobs),
		drive: core.NewDrive(core.NewState()), now: 1_000}
	for _, b := range core.ConstantBlobs() {
		if _, err := blobs.Put(s.ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func (s *scripted) tick() int64 { s.now++; return s.now }

func (s *scripted) ref(data, media string) content.ContentRef {
	s.t.Helper()
	r, err := blob.PutRef(s.ctx, s.blobs, []byte(data), media, "")
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

func (s *scripted) entry(kind, role, text string) core.EntryInput {
	return core.EntryInput{Kind: kind, Role: role, Content: s.ref(text, content.MediaText),
		TokenEstimate: core.TokenEstimate{Tokens: int64(len(text)/4 + 1), Quality: core.EstimateHeuristic}, Preview: text}
}

func (s *scripted) input(text string) []core.InputItem {
	return []core.InputItem{{Content: s.ref(text, content.MediaText),
		TokenEstimate: core.TokenEstimate{Tokens: int64(len(text)/4 + 1), Quality: core.EstimateHeuristic}, Preview: text}}
}

// admit admits a command and commits every append that follows; it returns
// the first intent that is not an append.
func (s *scripted) admit(cmd core.Command) core.Intent {
	s.t.Helper()
	if _, err := s.drive.Admit(cmd); err != nil {
		s.t.Fatalf("admit %T: %v", cmd, err)
	}
	for {
		in := s.drive.Next(s.tick())
		if in.Kind != core.IntentAppend {
			return in
		}
		evs, err := s.log.Append(s.ctx, s.id, in.ExpectedHead, in.Proposals)
		if err != nil {
			s.t.Fatalf("append: %v", err)
		}
		if err := s.drive.Committed(evs); err != nil {
			s.t.Fatalf("committed: %v", err)
		}
	}
}

func (s *scripted) answer(in core.Intent, text string) core.Intent {
	s.t.Helper()
	if in.Kind != core.IntentGenerate {
		s.t.Fatalf("intent %v, want generate", in.Kind)
	}
	g := in.Generate
	return s.admit(core.GenerationResult{AtMs: s.tick(), RunID: g.RunID, Turn: g.Turn,
		Entries: []core.EntryInput{s.entry(core.EntryMessage, core.RoleAssistant, text)}, Finish: "stop",
		Usage: core.Usage{InputTokens: 10, OutputTokens: 3}})
}

func (s *scripted) callTool(in core.Intent, callID string) core.Intent {
	s.t.Helper()
	if in.Kind != core.IntentGenerate {
		s.t.Fatalf("intent %v, want generate", in.Kind)
	}
	g := in.Generate
	c := core.ToolCall{CallID: callID, Name: "lookup", Arguments: s.ref(`{"q":"`+callID+`"}`, content.MediaJSON)}
	in = s.admit(core.GenerationResult{AtMs: s.tick(), RunID: g.RunID, Turn: g.Turn, Finish: "tool_calls", ToolCalls: []core.ToolCall{c},
		Entries: []core.EntryInput{s.entry(core.EntryMessage, core.RoleAssistant, "let me look"),
			{Kind: core.EntryToolCall, Content: c.Arguments, CallID: c.CallID, ToolName: c.Name,
				TokenEstimate: core.TokenEstimate{Tokens: 5, Quality: core.EstimateHeuristic}}}})
	if in.Kind != core.IntentInvokeTools {
		s.t.Fatalf("intent %v, want invoke_tools", in.Kind)
	}
	res := s.entry(core.EntryToolResult, "", "found "+callID)
	return s.admit(core.ToolResult{AtMs: s.tick(), RunID: in.Tools.RunID, Turn: in.Tools.Turn, CallID: callID, Status: core.CallOK, Result: res})
}

// script plays a session with tool calls, context edits, steering, a
// queued and a cancelled run, and a failed generation, in rounds.
func (s *scripted) script(rounds int) {
	s.t.Helper()
	instr := s.entry(core.EntryInstructions, "", "be brief")
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "test", APIKind: core.APIChatCompletions, Model: "m"}, Tools: []string{"lookup"}}
	s.admit(core.OpenSession{AtMs: s.tick(), SessionID: s.id, Config: cfg, Instructions: &instr})
	for i := range rounds {
		run := func(n int) string { return fmt.Sprintf("%s%d_%d", s.runs, i, n) }
		in := s.admit(core.StartRun{AtMs: s.tick(), RunID: run(1), Input: s.input(fmt.Sprintf("question %d", i))})
		in = s.callTool(in, fmt.Sprintf("call_%d", i))
		s.answer(in, fmt.Sprintf("answer %d", i))

		note := s.entry(core.EntryMessage, core.RoleUser, fmt.Sprintf("note %d", i))
		note.Key = fmt.Sprintf("note.%d", i)
		s.admit(core.AppendContext{AtMs: s.tick(), Entries: []core.EntryInput{note}})
		if i > 0 {
			s.admit(core.RemoveContext{AtMs: s.tick(), Keys: []string{fmt.Sprintf("note.%d", i-1)}})
		}

		in = s.admit(core.StartRun{AtMs: s.tick(), RunID: run(2), Input: s.input("second")})
		s.admit(core.StartRun{AtMs: s.tick(), RunID: run(3), Input: s.input("queued")})
		s.admit(core.StartRun{AtMs: s.tick(), RunID: run(4), Input: s.input("cancelled while queued")})
		s.admit(core.CancelRun{AtMs: s.tick(), RunID: run(4), Reason: "changed my mind"})
		s.admit(core.Steer{AtMs: s.tick(), SteeringID: "st_" + run(2), Input: s.input("also this")})
		in = s.answer(in, "second answer")  // the steering takes another turn
		in = s.answer(in, "steered answer") // run 3 starts
		g := in.Generate
		if g.RunID != run(3) {
			s.t.Fatalf("generating for %s, want %s", g.RunID, run(3))
		}
		s.admit(core.GenerationResult{AtMs: s.tick(), RunID: g.RunID, Turn: g.Turn,
			Failure: &core.Failure{Kind: "provider", Message: "terminal"}})
	}
}

func (s *scripted) events() []core.Event {
	s.t.Helper()
	evs, err := s.log.ReadAfter(s.ctx, s.id, 0, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	return evs
}

func encode(t *testing.T, st *core.State) []byte {
	t.Helper()
	b, err := core.EncodeCheckpoint(st)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func replayTo(t *testing.T, evs []core.Event, n int) *core.State {
	t.Helper()
	st, err := core.Replay(evs[:n])
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// capture is a logger writing to a buffer.
func capture() (*slog.Logger, *testenv.Buffer) {
	buf := &testenv.Buffer{}
	return slog.New(slog.NewTextHandler(buf, nil)), buf
}

// countingLog counts the events ReadAfter returns.
type countingLog struct {
	store.SessionLog
	mu   sync.Mutex
	read int
}

func (l *countingLog) ReadAfter(ctx context.Context, id string, after int64, limit int) ([]core.Event, error) {
	evs, err := l.SessionLog.ReadAfter(ctx, id, after, limit)
	l.mu.Lock()
	l.read += len(evs)
	l.mu.Unlock()
	return evs, err
}

// droppingLog loses the event at seq drop from every read, as a damaged or
// partially restored log would; its catalog still records the full head.
type droppingLog struct {
	store.SessionLog
	drop int64
}

func (l droppingLog) ReadAfter(ctx context.Context, id string, after int64, limit int) ([]core.Event, error) {
	evs, err := l.SessionLog.ReadAfter(ctx, id, after, limit)
	out := evs[:0:0]
	for _, ev := range evs {
		if ev.Seq != l.drop {
			out = append(out, ev)
		}
	}
	return out, err
}

// fixedCheckpoint is a catalog that always answers with one checkpoint (or
// an error), whatever was stored.
type fixedCheckpoint struct {
	seq int64
	d   content.Digest
	err error
}

func (f fixedCheckpoint) PutCheckpoint(context.Context, string, int64, content.Digest) error {
	return nil
}
func (f fixedCheckpoint) LatestCheckpoint(context.Context, string, int64) (int64, content.Digest, error) {
	return f.seq, f.d, f.err
}
func (f fixedCheckpoint) PruneCheckpoints(context.Context, string, int64) (int, error) { return 0, nil }
func (f fixedCheckpoint) PutEdges(context.Context, content.Digest, []content.Digest) error {
	return nil
}
func (f fixedCheckpoint) Children(context.Context, content.Digest) ([]content.Digest, error) {
	return nil, nil
}

// Loading from a checkpoint at any seq plus the tail after it gives exactly
// the state a full replay gives, reading only the tail.
func TestLoadState_CheckpointPlusTailEqualsFullReplayAtEveryCut(t *testing.T) {
	s := newScripted(t, "s1", "run_")
	s.script(3)
	evs := s.events()
	head := len(evs)
	want := encode(t, replayTo(t, evs, head))
	if !bytes.Equal(want, encode(t, s.drive.State())) {
		t.Fatal("the live state differs from a replay")
	}

	// Without checkpoints: a full replay.
	st, rep, err := runtime.LoadStateReport(s.ctx, s.log, nil, s.blobs, s.id, nil)
	if err != nil || rep.CheckpointSeq != 0 || rep.EventsRead != head || rep.Fallback != "" {
		t.Fatalf("LoadState without checkpoints: report %+v, %v", rep, err)
	}
	if !bytes.Equal(encode(t, st), want) {
		t.Fatal("full replay through LoadState differs from core.Replay")
	}

	logger, logs := capture()
	active := 0
	for cut := 1; cut <= head; cut++ {
		at := replayTo(t, evs, cut)
		if at.HasWork() {
			active++
		}
		d, err := s.blobs.Put(s.ctx, encode(t, at))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.log.PutCheckpoint(s.ctx, s.id, int64(cut), d); err != nil {
			t.Fatal(err)
		}
		counted := &countingLog{SessionLog: s.log}
		st, rep, err := runtime.LoadStateReport(s.ctx, counted, s.log, s.blobs, s.id, logger)
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		if rep.CheckpointSeq != int64(cut) || rep.EventsRead != head-cut || counted.read != head-cut || rep.Fallback != "" {
			t.Fatalf("cut %d: report %+v, %d events read; want the checkpoint and %d events", cut, rep, counted.read, head-cut)
		}
		if got := encode(t, st); !bytes.Equal(got, want) {
			t.Fatalf("cut %d: checkpoint + tail differs from a full replay:\n got  %s\n want %s", cut, got, want)
		}
	}
	if active < head/3 {
		t.Fatalf("only %d of %d cuts have an active or queued run; the script should exercise them", active, head)
	}
	if logs.String() != "" {
		t.Fatalf("usable checkpoints logged: %s", logs)
	}
}

// Every kind of unusable checkpoint falls back to a full replay, says why in
// a warning, and still yields the replayed state.
func TestLoadState_UnusableCheckpointsFallBackToFullReplay(t *testing.T) {
	s := newScripted(t, "s1", "run_")
	s.script(2)
	evs := s.events()
	head := len(evs)
	want := encode(t, replayTo(t, evs, head))
	mid := head / 2
	put := func(data []byte) content.Digest {
		t.Helper()
		d, err := s.blobs.Put(s.ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tamper := func(st *core.State, edit func(m map[string]any)) []byte {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(encode(t, st), &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	atMid := replayTo(t, evs, mid)

	// A checkpoint past the log's head: the state of a longer log of the
	// same session, over a log that holds fewer events.
	short := store.NewMemory(s.blobs)
	if _, err := short.Append(s.ctx, "s1", 0, proposalsOf(evs[:mid])); err != nil {
		t.Fatal(err)
	}

	// A checkpoint that decodes but to which the tail does not apply: the
	// same session with other run ids, at a seq whose next event names a run.
	other := newScripted(t, "s1", "other_")
	other.blobs = s.blobs
	other.log = store.NewMemory(s.blobs)
	other.script(2)
	otherEvs := other.events()
	badCut := 0
	for cut := 1; cut < head && cut < len(otherEvs); cut++ {
		st := replayTo(t, otherEvs, cut)
		if st.Apply(evs[cut]) != nil {
			badCut = cut
			break
		}
	}
	if badCut == 0 {
		t.Fatal("no cut where the other script's state rejects the next event")
	}

	cases := []struct {
		name   string
		log    store.SessionLog
		cps    store.Checkpoints
		reason string
		head   int
	}{
		{"missing blob", s.log, fixedCheckpoint{seq: int64(mid), d: content.Sum([]byte("never stored"))}, "reading its blob", head},
		{"not JSON", s.log, fixedCheckpoint{seq: int64(mid), d: put([]byte("not json"))}, "not JSON", head},
		{"unknown version", s.log, fixedCheckpoint{seq: int64(mid), d: put(tamper(atMid, func(m map[string]any) { m["version"] = 99 }))}, "version 99", head},
		{"unknown format", s.log, fixedCheckpoint{seq: int64(mid), d: put(tamper(atMid, func(m map[string]any) { m["format"] = "other" }))}, `format "other"`, head},
		{"fails validation", s.log, fixedCheckpoint{seq: int64(mid), d: put(tamper(atMid, func(m map[string]any) { m["active"] = "run_ghost" }))}, "run_ghost", head},
		{"recorded at another seq", s.log, fixedCheckpoint{seq: int64(mid + 1), d: put(encode(t, atMid))}, "recorded at seq", head},
		{"of another session", s.log, fixedCheckpoint{seq: int64(mid), d: put(tamper(atMid, func(m map[string]any) { m["sessionId"] = "s2" }))}, `session "s2"`, head},
		{"past the log head", short, fixedCheckpoint{seq: int64(head), d: put(want)}, "past the log head", mid},
		{"tail does not apply", s.log, fixedCheckpoint{seq: int64(badCut), d: put(encode(t, replayTo(t, otherEvs, badCut)))}, "tail does not apply", head},
		{"catalog error", s.log, fixedCheckpoint{err: errors.New("catalog unavailable")}, "catalog unavailable", head},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logger, logs := capture()
			counted := &countingLog{SessionLog: c.log}
			st, rep, err := runtime.LoadStateReport(s.ctx, counted, c.cps, s.blobs, "s1", logger)
			if err != nil {
				t.Fatalf("LoadState: %v", err)
			}
			if rep.CheckpointSeq != 0 || !strings.Contains(rep.Fallback, c.reason) {
				t.Fatalf("report %+v; want a full replay because of %q", rep, c.reason)
			}
			if got, want := encode(t, st), encode(t, replayTo(t, evs, c.head)); !bytes.Equal(got, want) {
				t.Fatal("the fallback state differs from a full replay")
			}
			if rep.EventsRead != c.head || counted.read < c.head {
				t.Fatalf("read %d events (report %d), want the whole log of %d", counted.read, rep.EventsRead, c.head)
			}
			out := logs.String()
			if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "checkpoint unusable") || !strings.Contains(out, "session=s1") {
				t.Fatalf("no warning logged: %q", out)
			}
		})
	}
}

func proposalsOf(evs []core.Event) []core.Proposal {
	out := make([]core.Proposal, len(evs))
	for i, ev := range evs {
		refs, err := core.EventRefs(ev)
		if err != nil {
			panic(err)
		}
		out[i] = core.Proposal{ObservedAtMs: ev.ObservedAtMs, Joins: ev.Joins, Kind: ev.Kind, Version: ev.Version, Payload: ev.Payload, Refs: refs}
	}
	return out
}

// An event missing from the range a load needs fails with a typed
// history_incomplete error, never a partial state, with or without a
// checkpoint; an event missing only before a usable checkpoint is not needed.
func TestLoadState_MissingEventsAreHistoryIncomplete(t *testing.T) {
	s := newScripted(t, "s1", "run_")
	s.script(2)
	evs := s.events()
	head := int64(len(evs))
	cp := head / 2
	d, err := s.blobs.Put(s.ctx, encode(t, replayTo(t, evs, int(cp))))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.log.PutCheckpoint(s.ctx, "s1", cp, d); err != nil {
		t.Fatal(err)
	}
	bad := fixedCheckpoint{seq: cp, d: content.Sum([]byte("never stored"))}
	cases := []struct {
		name    string
		cps     store.Checkpoints
		drop    int64
		missing int64
	}{
		{"full replay, a middle event", nil, 5, 5},
		{"full replay, the first event", nil, 1, 1},
		{"full replay, the last event", nil, head, head},
		{"checkpoint, the first tail event", s.log, cp + 1, cp + 1},
		{"checkpoint, a later tail event", s.log, cp + 3, cp + 3},
		{"checkpoint, the last event", s.log, head, head},
		{"unusable checkpoint, an event before it", bad, cp - 1, cp - 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logger, _ := capture()
			st, err := runtime.LoadState(s.ctx, droppingLog{s.log, c.drop}, c.cps, s.blobs, "s1", logger)
			if st != nil {
				t.Fatalf("a partial state at head %d was returned", st.Head)
			}
			var hi *runtime.HistoryIncompleteError
			if !errors.As(err, &hi) || !errors.Is(err, runtime.ErrHistoryIncomplete) {
				t.Fatalf("err = %v (%T), want a *runtime.HistoryIncompleteError", err, err)
			}
			if hi.SessionID != "s1" || hi.Missing != c.missing || hi.Head != head {
				t.Fatalf("error %+v, want event %d of %d missing", *hi, c.missing, head)
			}
		})
	}

	// Only the tail is needed after a usable checkpoint.
	st, rep, err := runtime.LoadStateReport(s.ctx, droppingLog{s.log, cp - 1}, s.log, s.blobs, "s1", nil)
	if err != nil || rep.CheckpointSeq != cp {
		t.Fatalf("an event lost before the checkpoint: report %+v, %v", rep, err)
	}
	if !bytes.Equal(encode(t, st), encode(t, replayTo(t, evs, int(head)))) {
		t.Fatal("checkpoint + tail differs from a full replay")
	}
}

func TestLoadState_UnknownSessionIsNotFound(t *testing.T) {
	s := newScripted(t, "s1", "run_")
	s.script(1)
	for _, cps := range []store.Checkpoints{nil, s.log} {
		if st, err := runtime.LoadState(s.ctx, s.log, cps, s.blobs, "ghost", nil); st != nil || !errors.Is(err, store.ErrSessionNotFound) {
			t.Fatalf("LoadState(ghost) = %v, %v; want ErrSessionNotFound", st, err)
		}
	}
}

// The policy: a checkpoint at every idle boundary with new events, and one
// every CheckpointEvery events while the session has work.
func TestCheckpointPolicy(t *testing.T) {
	s := newScripted(t, "s1", "run_")
	s.script(1)
	evs := s.events()
	idle, busy := 0, 0
	for n := 1; n <= len(evs); n++ {
		st := replayTo(t, evs, n)
		isIdle := !st.HasWork() && st.Compaction == nil
		if runtime.Idle(st) != isIdle {
			t.Fatalf("seq %d: Idle = %v", n, runtime.Idle(st))
		}
		if runtime.CheckpointDue(st, 0) {
			t.Fatalf("seq %d (idle %v): due after only %d events", n, isIdle, n)
		}
		if got := runtime.CheckpointDue(st, int64(n)-runtime.IdleCheckpointEvery); got != isIdle {
			t.Fatalf("seq %d (idle %v): due %v %d events after the last checkpoint", n, isIdle, got, runtime.IdleCheckpointEvery)
		}
		if runtime.CheckpointDue(st, int64(n)-runtime.IdleCheckpointEvery+1) && isIdle {
			t.Fatalf("seq %d: idle and due only %d events after the last checkpoint", n, runtime.IdleCheckpointEvery-1)
		}
		if got := runtime.CheckpointDueEveryIdle(st, 0); got != isIdle {
			t.Fatalf("seq %d (idle %v): due %v after no checkpoint under the every-idle policy", n, isIdle, got)
		}
		if runtime.CheckpointDue(st, int64(n)) || runtime.CheckpointDueEveryIdle(st, int64(n)) {
			t.Fatalf("seq %d: due again right after a checkpoint at the same seq", n)
		}
		if isIdle {
			idle++
		} else {
			busy++
			for _, due := range []func(*core.State, int64) bool{runtime.CheckpointDue, runtime.CheckpointDueEveryIdle} {
				if !due(st, int64(n)-runtime.CheckpointEvery) {
					t.Fatalf("seq %d: not due %d events after the last checkpoint", n, runtime.CheckpointEvery)
				}
				if due(st, int64(n)-runtime.CheckpointEvery+1) {
					t.Fatalf("seq %d: due only %d events after the last checkpoint", n, runtime.CheckpointEvery-1)
				}
			}
		}
	}
	if idle == 0 || busy == 0 {
		t.Fatalf("the script has %d idle and %d busy seqs; want both", idle, busy)
	}
	if runtime.CheckpointDue(core.NewState(), -runtime.CheckpointEvery) {
		t.Fatal("a checkpoint is due for an empty state")
	}
}

// CheckpointPolicy.Maybe writes a checkpoint that LoadState then uses, prunes the
// older ones, and writes nothing when none is due.
func TestCheckpointPolicy_WritesWhenDueAndPrunes(t *testing.T) {
	s := newScripted(t, "s1", "run_")
	s.script(1)
	evs := s.events()
	head := int64(len(evs))
	st := s.drive.State()
	if !runtime.Idle(st) {
		t.Fatal("the script should end idle")
	}
	d, err := s.blobs.Put(s.ctx, encode(t, replayTo(t, evs, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.log.PutCheckpoint(s.ctx, "s1", 2, d); err != nil {
		t.Fatal(err)
	}
	// A mark as if the checkpoint at 2 were IdleCheckpointEvery events ago.
	due := runtime.CheckpointMark{Seq: head - runtime.IdleCheckpointEvery}

	if m, err := defaultPolicy.Maybe(s.ctx, nil, s.blobs, st, due); err != nil || m != due {
		t.Fatalf("MaybeCheckpoint without a store = %+v, %v", m, err)
	}
	notDue := runtime.CheckpointMark{Seq: 2}
	if m, err := defaultPolicy.Maybe(s.ctx, s.log, s.blobs, st, notDue); err != nil || m != notDue {
		t.Fatalf("MaybeCheckpoint when not due = %+v, %v", m, err)
	}
	if got, _, err := s.log.LatestCheckpoint(s.ctx, "s1", 0); err != nil || got != 2 {
		t.Fatalf("a checkpoint was written when none was due: latest %d, %v", got, err)
	}

	m, err := defaultPolicy.Maybe(s.ctx, s.log, s.blobs, st, due)
	if err != nil || m.Seq != head {
		t.Fatalf("MaybeCheckpoint = %+v, %v; want seq %d", m, err, head)
	}
	got, d, err := s.log.LatestCheckpoint(s.ctx, "s1", 0)
	if err != nil || got != head {
		t.Fatalf("latest checkpoint %d, %v; want %d", got, err, head)
	}
	// The checkpoint is an index whose chunks it holds through edges.
	data, err := s.blobs.Get(s.ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := core.CheckpointChunkRefs(data)
	if err != nil || len(refs) == 0 {
		t.Fatalf("the checkpoint blob names %d chunks (%v); want a chunked index", len(refs), err)
	}
	kids, err := s.log.Children(s.ctx, d)
	want := slices.Clone(refs)
	content.SortDigests(want)
	if want = slices.Compact(want); err != nil || !slices.Equal(kids, want) {
		t.Fatalf("the index holds %v (%v); want its chunks %v", kids, err, want)
	}
	if _, _, err := s.log.LatestCheckpoint(s.ctx, "s1", head-1); !errors.Is(err, store.ErrCheckpointNotFound) {
		t.Fatalf("the older checkpoint was not pruned: %v", err)
	}
	counted := &countingLog{SessionLog: s.log}
	loaded, rep, err := runtime.LoadStateReport(s.ctx, counted, s.log, s.blobs, "s1", nil)
	if err != nil || rep.CheckpointSeq != head || counted.read != 0 || rep.Fallback != "" {
		t.Fatalf("load after the checkpoint: report %+v, %d events read, %v", rep, counted.read, err)
	}
	if !bytes.Equal(encode(t, loaded), encode(t, st)) {
		t.Fatal("the checkpoint does not load as the state it was written from")
	}

	// A failed write leaves the mark as it was and reports the error.
	failing := failingBatches{Checkpoints: s.log}
	s.admit(core.AppendContext{AtMs: s.tick(), Entries: []core.EntryInput{s.entry(core.EntryMessage, core.RoleUser, "more")}})
	later := runtime.CheckpointMark{Seq: head - runtime.IdleCheckpointEvery}
	if m, err := defaultPolicy.Maybe(s.ctx, failing, s.blobs, s.drive.State(), later); err == nil || m != later {
		t.Fatalf("MaybeCheckpoint over failing blobs = %+v, %v; want %+v and an error", m, err, later)
	}
}

// The next checkpoint stores only the chunks that changed; when a chunk
// its memo remembers has been collected since, it stores every chunk again
// rather than record a checkpoint that cannot be read.
func TestCheckpointPolicy_StoresChangedChunksAndRecoversCollectedOnes(t *testing.T) {
	s := newScripted(t, "s1", "run_")
	s.script(40)
	puts := &countingBatches{Checkpoints: s.log}
	first, err := defaultPolicy.Maybe(s.ctx, puts, s.blobs, s.drive.State(), runtime.CheckpointMark{Seq: -runtime.CheckpointEvery})
	if err != nil || first.Seq != s.drive.State().Head {
		t.Fatalf("first checkpoint: %+v, %v", first, err)
	}
	more := func(text string) {
		s.admit(core.AppendContext{AtMs: s.tick(), Entries: []core.EntryInput{s.entry(core.EntryMessage, core.RoleUser, text)}})
	}
	all := puts.n
	more("one more")
	puts.n = 0
	forced := first
	forced.Seq -= runtime.IdleCheckpointEvery // due now
	second, err := defaultPolicy.Maybe(s.ctx, puts, s.blobs, s.drive.State(), forced)
	if err != nil || second.Seq != s.drive.State().Head {
		t.Fatalf("second checkpoint: %+v, %v", second, err)
	}
	if puts.n > 4 || all < 8 || puts.batches != 2 {
		t.Fatalf("the second checkpoint stored %d blobs, the first %d, in %d batches; want only the index and the changed chunks, one batch each", puts.n, all, puts.batches)
	}

	// Every remembered chunk reported missing once: the write starts over.
	more("and another")
	puts.n = 0
	forced = second
	forced.Seq -= runtime.IdleCheckpointEvery
	cps := &missingOnce{countingBatches: puts}
	third, err := defaultPolicy.Maybe(s.ctx, cps, s.blobs, s.drive.State(), forced)
	if err != nil || third.Seq != s.drive.State().Head || cps.failed != 1 || puts.n < all {
		t.Fatalf("third checkpoint: %+v, %v; the batch failed %d times, %d blobs stored (first stored %d)", third, err, cps.failed, puts.n, all)
	}
	reads := &readingMany{readingBlobs: readingBlobs{Store: s.blobs}}
	if _, rep, err := runtime.LoadStateReport(s.ctx, s.log, s.log, reads, "s1", nil); err != nil || rep.CheckpointSeq != third.Seq || rep.Fallback != "" {
		t.Fatalf("load after the third checkpoint: %+v, %v", rep, err)
	}
	// The index is one read; the pages it names one batch, and the
	// chunks they name another.
	if reads.gets != 1 || reads.many != 2 {
		t.Fatalf("loading the checkpoint read %d single blobs and %d batches, want 1 and 2", reads.gets, reads.many)
	}
}

// countingBatches counts the batches written and the blobs in them.
type countingBatches struct {
	store.Checkpoints
	n, batches int
}

func (c *countingBatches) WriteBatch(ctx context.Context, b store.Batch) error {
	c.n += len(b.Blobs)
	c.batches++
	return c.Checkpoints.(store.BatchWriter).WriteBatch(ctx, b)
}

// missingOnce reports every child of the first batch's edges as missing.
type missingOnce struct {
	*countingBatches
	failed int
}

func (m *missingOnce) WriteBatch(ctx context.Context, b store.Batch) error {
	if m.failed == 0 {
		m.failed++
		var kids []content.Digest
		for _, e := range b.Edges {
			kids = append(kids, e.Children...)
		}
		return &blob.MissingError{Digests: kids}
	}
	return m.countingBatches.WriteBatch(ctx, b)
}

type failingBatches struct{ store.Checkpoints }

func (failingBatches) WriteBatch(context.Context, store.Batch) error {
	return errors.New("disk full")
}

// defaultPolicy is the policy hosts use unless configured otherwise.
var defaultPolicy runtime.CheckpointPolicy

// A checkpoint's index holds its chunks: a collection pass with no grace
// keeps every chunk the latest checkpoint names, and releases the pruned
// checkpoint's index and the chunks only it named.
func TestCheckpoint_IndexHoldsItsChunksAgainstCollection(t *testing.T) {
	s := newScripted(t, "s1", "run_")
	s.script(40)
	due := runtime.CheckpointMark{Seq: -runtime.CheckpointEvery}
	first, err := defaultPolicy.Maybe(s.ctx, s.log, s.blobs, s.drive.State(), due)
	if err != nil {
		t.Fatal(err)
	}
	_, oldIndex, err := s.log.LatestCheckpoint(s.ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	oldData, err := s.blobs.Get(s.ctx, oldIndex)
	if err != nil {
		t.Fatal(err)
	}
	oldRefs, _ := core.CheckpointChunkRefs(oldData)
	// Removing the first entries changes the first chunk.
	s.admit(core.RemoveContext{AtMs: s.tick(), EntryIDs: []string{core.EntryID(2), core.EntryID(3)}})
	first.Seq -= runtime.IdleCheckpointEvery
	second, err := defaultPolicy.Maybe(s.ctx, s.log, s.blobs, s.drive.State(), first)
	if err != nil || second.Seq != s.drive.State().Head {
		t.Fatalf("second checkpoint: %+v, %v", second, err)
	}
	_, index, _ := s.log.LatestCheckpoint(s.ctx, "s1", 0)
	data, _ := s.blobs.Get(s.ctx, index)
	refs, _ := core.CheckpointChunkRefs(data)

	c := &retention.Collector{
		Universes: retention.Single("default", s.log),
		Now:       func() time.Time { return time.Now().Add(time.Hour) },
		Logger:    slog.New(slog.DiscardHandler),
	}
	for range 3 { // a released parent frees its children on a later pass
		if _, err := c.Collect(s.ctx, retention.Options{Grace: 0}); err != nil {
			t.Fatal(err)
		}
	}
	if _, rep, err := runtime.LoadStateReport(s.ctx, s.log, s.log, s.blobs, "s1", nil); err != nil || rep.CheckpointSeq != second.Seq || rep.Fallback != "" {
		t.Fatalf("load after collection: %+v, %v", rep, err)
	}
	if _, err := s.blobs.Get(s.ctx, oldIndex); err == nil {
		t.Error("the pruned checkpoint's index survived collection")
	}
	released := 0
	for _, d := range oldRefs {
		if !slices.Contains(refs, d) {
			released++
			if _, err := s.blobs.Get(s.ctx, d); err == nil {
				t.Errorf("chunk %s, named only by the pruned checkpoint, survived collection", d)
			}
		}
	}
	if released == 0 {
		t.Fatal("the second checkpoint shares every chunk of the first; the test proves nothing")
	}
}
