package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store"
)

func (e *env) fork(t *testing.T, p api.SessionForkParams) api.SessionForkResult {
	t.Helper()
	got, err := e.c.ForkSession(bg, p)
	if err != nil {
		t.Fatalf("session/fork %+v: %v", p, err)
	}
	return got
}

func (e *env) run(t *testing.T, sid, text string) {
	t.Helper()
	e.waitStatus(t, sid, e.start(t, sid, text).RunID, core.StatusCompleted)
}

// userTexts lists the previews of the user messages of a context.
func userTexts(entries []core.Entry) []string {
	var out []string
	for _, en := range entries {
		if en.Kind == core.EntryMessage && en.Role == core.RoleUser {
			out = append(out, en.Preview)
		}
	}
	return out
}

func seqsOf(evs []api.EventView) []int64 {
	var out []int64
	for _, ev := range evs {
		out = append(out, ev.Seq)
	}
	return out
}

// A fork is an ordinary session over its source's history: a run in it sees
// the inherited conversation, its events continue the source's seqs, and
// nothing it does, nor anything the source does later, crosses over.
func TestSessionFork_RunInTheForkLeavesTheSourceAlone(t *testing.T) {
	e := newEnv(t)
	src := e.create(t, api.CreateSessionParams{SessionID: "src", Instructions: "be brief"})
	e.run(t, src, "one")
	afterOne := e.read(t, src).Head
	e.run(t, src, "two")
	head := e.read(t, src).Head
	srcEvents := e.events(t, src)

	f := e.fork(t, api.SessionForkParams{SessionID: src})
	if f.AtSeq != head || f.SessionID == "" || f.SessionID == src {
		t.Fatalf("session/fork = %+v, want a new session at the head %d", f, head)
	}
	got := e.read(t, f.SessionID)
	if got.Head != head || got.Status != core.SessionStatusOpen || got.SessionID != f.SessionID ||
		got.Source == nil || *got.Source != (api.SessionSource{SessionID: src, AtSeq: head}) {
		t.Fatalf("session/read of the fork = %+v (source %+v)", got, got.Source)
	}
	if e.read(t, src).Source != nil {
		t.Fatal("the source shows lineage")
	}
	if cx := e.context(t, f.SessionID); !slices.Equal(userTexts(cx.Entries), []string{"one", "two"}) {
		t.Fatalf("fork's context: %+v", cx.Entries)
	}

	calls := e.model.calls()
	e.run(t, f.SessionID, "three")
	if got := userTexts(e.model.request(calls).Entries); !slices.Equal(got, []string{"one", "two", "three"}) {
		t.Fatalf("the fork's run sent the model %q", got)
	}
	forkEvents := e.events(t, f.SessionID)
	if want := seqsOf(forkEvents); !slices.Equal(want[:head], seqsOf(srcEvents)) || want[len(want)-1] != int64(len(want)) {
		t.Fatalf("fork seqs %v", want)
	}
	for i, ev := range srcEvents {
		if fe := forkEvents[i]; fe.Kind != ev.Kind || !bytes.Equal(fe.Payload, ev.Payload) {
			t.Fatalf("fork event %d = %s %s, source's %s %s", ev.Seq, fe.Kind, fe.Payload, ev.Kind, ev.Payload)
		}
	}
	// The source did not move, and its later run is not in the fork.
	if h := e.read(t, src).Head; h != head {
		t.Fatalf("source head %d after the fork's run, want %d", h, head)
	}
	e.run(t, src, "four")
	if got := userTexts(e.context(t, src).Entries); !slices.Equal(got, []string{"one", "two", "four"}) {
		t.Fatalf("source context after its own run: %q", got)
	}
	if got := userTexts(e.context(t, f.SessionID).Entries); !slices.Equal(got, []string{"one", "two", "three"}) {
		t.Fatalf("fork context after the source's run: %q", got)
	}
	if n := len(e.events(t, f.SessionID)); n != len(forkEvents) {
		t.Fatalf("the fork has %d events after the source's run, had %d", n, len(forkEvents))
	}

	// An earlier fork point, under a chosen id; then a fork of that fork,
	// which steers and compacts like any session.
	early := e.fork(t, api.SessionForkParams{SessionID: src, AtSeq: &afterOne, NewSessionID: "early"})
	if early.SessionID != "early" || early.AtSeq != afterOne {
		t.Fatalf("fork at %d = %+v", afterOne, early)
	}
	if got := userTexts(e.context(t, "early").Entries); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("context of the fork after run one: %q", got)
	}
	e.run(t, "early", "five")
	grand := e.fork(t, api.SessionForkParams{SessionID: "early"})
	if gs := e.read(t, grand.SessionID).Source; gs == nil || *gs != (api.SessionSource{SessionID: "early", AtSeq: grand.AtSeq}) {
		t.Fatalf("fork of a fork: source %+v", gs)
	}
	e.model.setHold(true)
	// The call's number is taken before the run starts: taken after, it
	// may be an earlier call's, and the steer and the unhold below would
	// then come before this call is held.
	next := e.model.calls()
	r := e.start(t, grand.SessionID, "six")
	e.model.waitArrived(t, next)
	if _, err := e.c.Steer(bg, api.SteerParams{SessionID: grand.SessionID, Input: textInput("and seven")}); err != nil {
		t.Fatalf("steering the fork of a fork: %v", err)
	}
	// Unheld first: a call the release lets start (a steered turn) must not
	// be held with nobody left to release it.
	e.model.setHold(false)
	e.model.releaseOne(t)
	e.waitStatus(t, grand.SessionID, r.RunID, core.StatusCompleted)
	if _, err := e.c.CompactContext(bg, grand.SessionID); err != nil {
		t.Fatalf("compacting the fork of a fork: %v", err)
	}
	e.waitCompaction(t, grand.SessionID)
	if got := kindsOf(e.context(t, grand.SessionID)); got != "instructions,summary" {
		t.Fatalf("fork of a fork after compaction: %s", got)
	}
	if got := userTexts(e.context(t, "early").Entries); !slices.Equal(got, []string{"one", "five"}) {
		t.Fatalf("the fork's source after its fork compacted: %q", got)
	}
}

// A fork point inside a run is refused with the largest safe seq; without
// atSeq the fork starts there.
func TestSessionFork_PointInsideARunIsTyped(t *testing.T) {
	e := newEnv(t)
	src := e.create(t, api.CreateSessionParams{SessionID: "src", Instructions: "be brief"})
	e.run(t, src, "one")
	e.model.setHold(true)
	run := e.start(t, src, "two")
	e.model.waitArrived(t, 1)
	var accepted int64
	for _, ev := range e.events(t, src) {
		if ev.Kind == core.KindRunAccepted && bytes.Contains(ev.Payload, []byte(run.RunID)) {
			accepted = ev.Seq
		}
	}
	head := e.read(t, src).Head
	for _, at := range []int64{head, accepted} {
		err := e.rejected(t, src, api.KindForkPointInsideRun, func() error {
			_, err := e.c.ForkSession(bg, api.SessionForkParams{SessionID: src, AtSeq: &at})
			return err
		})
		if err.Data.SafeSeq == nil || *err.Data.SafeSeq != accepted-1 {
			t.Fatalf("fork at %d: safe seq %v, want %d", at, err.Data.SafeSeq, accepted-1)
		}
	}
	f := e.fork(t, api.SessionForkParams{SessionID: src})
	if f.AtSeq != accepted-1 {
		t.Fatalf("default fork point during a run = %d, want %d", f.AtSeq, accepted-1)
	}
	if got := e.read(t, f.SessionID); got.ActiveRun != nil || len(got.QueuedRuns) != 0 || got.Head != accepted-1 {
		t.Fatalf("fork taken during a run: %+v", got)
	}
	// Unheld first: a call the release lets start (a steered turn) must not
	// be held with nobody left to release it.
	e.model.setHold(false)
	e.model.releaseOne(t)
	e.waitStatus(t, src, run.RunID, core.StatusCompleted)
	e.run(t, f.SessionID, "three")
	if got := userTexts(e.context(t, f.SessionID).Entries); !slices.Equal(got, []string{"one", "three"}) {
		t.Fatalf("fork context: %q", got)
	}
	// Once the run has ended its seqs are still inside it, and the head is not.
	after := e.read(t, src).Head
	if got := e.fork(t, api.SessionForkParams{SessionID: src, AtSeq: &after}); got.AtSeq != after {
		t.Fatalf("fork at the head after the run = %+v", got)
	}

	zero, past := int64(0), after+1
	for _, at := range []*int64{&zero, &past} {
		e.rejected(t, src, api.KindInvalidParams, func() error {
			_, err := e.c.ForkSession(bg, api.SessionForkParams{SessionID: src, AtSeq: at})
			return err
		})
	}
	e.rejected(t, src, api.KindNotFound, func() error {
		_, err := e.c.ForkSession(bg, api.SessionForkParams{SessionID: "ghost"})
		return err
	})
	e.rejected(t, src, core.RejectSessionExists, func() error {
		_, err := e.c.ForkSession(bg, api.SessionForkParams{SessionID: src, NewSessionID: f.SessionID})
		return err
	})
	e.rejected(t, src, core.RejectInvalidInput, func() error {
		_, err := e.c.ForkSession(bg, api.SessionForkParams{SessionID: src, NewSessionID: "has space"})
		return err
	})
}

// Forks of forks stop at the depth limit with a typed error.
func TestSessionFork_DepthLimit(t *testing.T) {
	e := newEnv(t)
	prev := e.create(t, api.CreateSessionParams{SessionID: "f0"})
	for range store.MaxForkDepth {
		prev = e.fork(t, api.SessionForkParams{SessionID: prev}).SessionID
	}
	e.rejected(t, prev, api.KindForkTooDeep, func() error {
		_, err := e.c.ForkSession(bg, api.SessionForkParams{SessionID: prev})
		return err
	})
	e.run(t, prev, "still works")
}

// A clone opens a new session with the source's current configuration and
// instructions and none of its history.
func TestSessionClone_CopiesConfigurationNotHistory(t *testing.T) {
	e := newEnv(t)
	policy := &core.Compaction{Mode: core.CompactionProviderStandalone, ThresholdTokens: 100_000}
	src := e.create(t, api.CreateSessionParams{SessionID: "src", Instructions: "be brief", MaxTurns: 3, Compaction: policy,
		Transcription: &core.Transcription{ProviderID: "fake", Model: "whisper-1"}})
	e.run(t, src, "one")
	var srcOpened core.SessionOpened
	for _, ev := range e.events(t, src) {
		if ev.Kind == core.KindSessionOpened {
			if err := json.Unmarshal(ev.Payload, &srcOpened); err != nil {
				t.Fatal(err)
			}
		}
	}
	c, err := e.c.CloneSession(bg, api.SessionCloneParams{SessionID: src})
	if err != nil {
		t.Fatal(err)
	}
	got := e.read(t, c.SessionID)
	if got.Source == nil || *got.Source != (api.SessionSource{SessionID: src}) || got.Status != core.SessionStatusOpen {
		t.Fatalf("session/read of the clone = %+v (source %+v)", got, got.Source)
	}
	evs := e.events(t, c.SessionID)
	if len(evs) != 2 || evs[0].Kind != core.KindSessionOpened || evs[1].Kind != core.KindContextEntriesApplied {
		t.Fatalf("clone log: %+v", evs)
	}
	var opened core.SessionOpened
	if err := json.Unmarshal(evs[0].Payload, &opened); err != nil {
		t.Fatal(err)
	}
	if opened.SessionID != c.SessionID || !configEqual(opened.Config, srcOpened.Config) {
		t.Fatalf("clone opened with %+v, source with %+v", opened, srcOpened)
	}
	srcInstr, cloneInstr := e.context(t, src).Entries[0], e.context(t, c.SessionID).Entries
	if len(cloneInstr) != 1 || cloneInstr[0].Key != "instructions.main" || cloneInstr[0].Content != srcInstr.Content {
		t.Fatalf("clone context %+v, source instructions %+v", cloneInstr, srcInstr)
	}
	e.run(t, c.SessionID, "fresh")
	if got := userTexts(e.context(t, c.SessionID).Entries); !slices.Equal(got, []string{"fresh"}) {
		t.Fatalf("clone context after its run: %q", got)
	}
	// A closed source clones too, under a chosen id; an unknown one does not.
	if _, err := e.c.CloseSession(bg, api.SessionCloseParams{SessionID: src}); err != nil {
		t.Fatal(err)
	}
	if c2, err := e.c.CloneSession(bg, api.SessionCloneParams{SessionID: src, NewSessionID: "again"}); err != nil || c2.SessionID != "again" {
		t.Fatalf("clone of a closed session: %+v, %v", c2, err)
	}
	e.rejected(t, src, api.KindNotFound, func() error {
		_, err := e.c.CloneSession(bg, api.SessionCloneParams{SessionID: "ghost"})
		return err
	})
	e.rejected(t, src, core.RejectSessionExists, func() error {
		_, err := e.c.CloneSession(bg, api.SessionCloneParams{SessionID: src, NewSessionID: "again"})
		return err
	})
}

func configEqual(a, b core.SessionConfig) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// countingLog counts the events read and the appends made through it, and
// still forks, deletes and pages (it embeds the memory store).
type countingLog struct {
	*store.Memory
	read    atomic.Int64
	appends atomic.Int64
}

func (l *countingLog) ReadAfter(ctx context.Context, id string, after int64, limit int) ([]core.Event, error) {
	evs, err := l.Memory.ReadAfter(ctx, id, after, limit)
	l.read.Add(int64(len(evs)))
	return evs, err
}

func (l *countingLog) ReadBefore(ctx context.Context, id string, before int64, limit int) ([]core.Event, error) {
	evs, err := l.Memory.ReadBefore(ctx, id, before, limit)
	l.read.Add(int64(len(evs)))
	return evs, err
}

func (l *countingLog) Append(ctx context.Context, id string, head int64, ps []core.Proposal) ([]core.Event, error) {
	l.appends.Add(1)
	return l.Memory.Append(ctx, id, head, ps)
}

// longSession writes a session of n events straight into the log (opened,
// then n-1 messages), with a checkpoint at its head as the host keeps for
// an idle session.
func longSession(t *testing.T, log store.SessionLog, cps store.Checkpoints, blobs blob.Store, id string, n int) {
	t.Helper()
	text, err := runtime.TextInput(bg, blobs, "again")
	if err != nil {
		t.Fatal(err)
	}
	st := core.NewState()
	admit := func(cmd core.Command) {
		t.Helper()
		adm, err := core.Admit(st, cmd)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := log.Append(bg, id, st.Head, adm.Proposals)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if err := st.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	admit(core.OpenSession{AtMs: 1, SessionID: id, Config: core.SessionConfig{Model: testModel()}})
	for st.Head < int64(n) {
		admit(core.AppendContext{AtMs: 2, Entries: []core.EntryInput{{Kind: core.EntryMessage, Role: core.RoleUser,
			Content: text.Content, TokenEstimate: text.TokenEstimate, Preview: text.Preview}}})
	}
	if err := runtime.WriteCheckpoint(bg, cps, blobs, st); err != nil {
		t.Fatal(err)
	}
}

// Creating a fork reads and writes no event of a long source, the same at
// 20 events as at 2,000: the fork point's state comes from the source's
// checkpoint, and the fork reads its source's events only when asked.
func TestSessionFork_CostDoesNotGrowWithTheSource(t *testing.T) {
	blobs := blob.NewMemory()
	mem := store.NewMemory(blobs)
	log := &countingLog{Memory: mem}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := local.New(local.Options{Log: log, Blobs: blobs, Checkpoints: mem, Logger: quiet,
		Executor: &runtime.Executor{Blobs: blobs, Adapters: map[string]provider.Adapter{core.APIChatCompletions: newFakeModel()}, Files: mem}})
	if err := h.Start(bg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	srv := httptest.NewServer(api.NewServer(h, api.ServerOptions{APIKinds: []string{core.APIChatCompletions}, Logger: quiet}).Handler())
	t.Cleanup(srv.Close)
	c := api.NewClient(srv.URL, nil)

	cost := map[int]int64{}
	for _, n := range []int{20, 2000} {
		id := fmt.Sprintf("long-%d", n)
		longSession(t, mem, mem, blobs, id, n)
		log.read.Store(0)
		log.appends.Store(0)
		f, err := c.ForkSession(bg, api.SessionForkParams{SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		cost[n] = log.read.Load()
		if a := log.appends.Load(); a != 0 || f.AtSeq != int64(n) {
			t.Fatalf("forking %d events appended %d times, fork point %d", n, a, f.AtSeq)
		}
		// Its first read starts from the checkpoint made at the fork point.
		log.read.Store(0)
		if got, err := c.ReadSession(bg, f.SessionID); err != nil || got.Head != int64(n) || log.read.Load() != 0 {
			t.Fatalf("first session/read of the fork: %+v, %v, %d events read", got, err, log.read.Load())
		}
		// It is an ordinary session from there on.
		if _, err := c.AppendContext(bg, api.ContextAppendParams{SessionID: f.SessionID, Kind: core.EntryMessage, Text: "mine"}); err != nil {
			t.Fatal(err)
		}
		evs, err := c.ReadEvents(bg, api.EventsReadParams{SessionID: f.SessionID, After: int64(n) - 1})
		if err != nil || len(evs.Events) != 2 || evs.Events[1].Seq != int64(n)+1 {
			t.Fatalf("the fork's events around its point: %+v, %v", evs.Events, err)
		}
	}
	if cost[20] != 0 || cost[2000] != 0 {
		t.Fatalf("events read creating a fork: %v, want none at either length", cost)
	}
}
