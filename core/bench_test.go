package core_test

import (
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// benchStore is the cheapest possible store: it assigns seqs and forgets.
type benchStore struct{ head int64 }

func (s *benchStore) commit(b *testing.B, d *core.Drive, in core.Intent) {
	if in.ExpectedHead != s.head {
		b.Fatalf("expected head %d, store at %d", in.ExpectedHead, s.head)
	}
	evs := make([]core.Event, len(in.Proposals))
	for i, p := range in.Proposals {
		evs[i] = p.Committed(s.head + int64(i) + 1)
	}
	if err := d.Committed(evs); err != nil {
		b.Fatal(err)
	}
	s.head += int64(len(evs))
}

// settle commits appends until the drive wants something else.
func (s *benchStore) settle(b *testing.B, d *core.Drive, at int64) core.Intent {
	for {
		in := d.Next(at)
		if in.Kind != core.IntentAppend {
			return in
		}
		s.commit(b, d, in)
	}
}

// contextSession returns the log of an idle session with configuration
// cfg whose context holds n entries.
func contextSession(b *testing.B, cfg core.SessionConfig, n int) []core.Event {
	h := newHarness(b, cfg)
	for h.state().EntryCount() < n {
		h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "message "+itoa(h.state().EntryCount()))}})
	}
	return h.events
}

// BenchmarkTurn measures the engine's CPU per model turn with a zero-latency
// provider and a 200-entry context: admit the run, plan and commit the turn,
// admit the generation result, commit, plan and commit the run's completion.
// Every 10 turns the session is reset to its 200-entry baseline (untimed), so
// the context stays between 200 and 220 entries.
func BenchmarkTurn(b *testing.B) { benchmarkTurn(b, 200, 10) }

// BenchmarkTurnAt20000Entries is BenchmarkTurn with a context of 20,000
// entries, a 10,000-turn chat's, that grows turn by turn as a session's
// does (a reset would start each memo over): a turn must cost what it
// adds, not what the context holds.
func BenchmarkTurnAt20000Entries(b *testing.B) { benchmarkTurn(b, 20_000, 0) }

// BenchmarkTurnUnderACompactionThreshold is BenchmarkTurn in a session
// with automatic compaction whose threshold the context stays under: the
// gate sums the context's token estimates after each step of a turn.
func BenchmarkTurnUnderACompactionThreshold(b *testing.B) {
	benchmarkTurnWith(b, standalone(1<<40), 200, 10)
}

// benchmarkTurn runs turns on a context of entries entries, put back every
// resetEvery turns (0: never).
func benchmarkTurn(b *testing.B, entries, resetEvery int) {
	benchmarkTurnWith(b, testConfig("a", "b"), entries, resetEvery)
}

func benchmarkTurnWith(b *testing.B, cfg core.SessionConfig, entries, resetEvery int) {
	base := contextSession(b, cfg, entries)
	answer := assistant("done")
	var (
		d     *core.Drive
		store *benchStore
	)
	reset := func() {
		s, err := core.Replay(base)
		if err != nil {
			b.Fatal(err)
		}
		d, store = core.NewDrive(s), &benchStore{head: s.Head}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i == 0 || resetEvery > 0 && i%resetEvery == 0 {
			b.StopTimer()
			reset()
			b.StartTimer()
		}
		at := int64(i)
		if _, err := d.Admit(core.StartRun{AtMs: at, RunID: "r" + itoa(i+1), Input: input("go")}); err != nil {
			b.Fatal(err)
		}
		in := store.settle(b, d, at)
		if in.Kind != core.IntentGenerate {
			b.Fatalf("intent %s", in.Kind)
		}
		g := in.Generate
		if _, err := d.Admit(core.GenerationResult{AtMs: at, RunID: g.RunID, Turn: g.Turn, Entries: []core.EntryInput{answer}, Finish: "stop"}); err != nil {
			b.Fatal(err)
		}
		if in := store.settle(b, d, at); in.Kind != core.IntentIdle {
			b.Fatalf("intent %s", in.Kind)
		}
	}
}

// replaySession builds a log of exactly n events from runs with a tool round each.
func replaySession(b *testing.B, n int) []core.Event {
	h := newHarness(b, testConfig("a"))
	for i := 1; len(h.events) < n; i++ {
		h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r" + itoa(i), Input: input("question " + itoa(i))})
		h.callTools(call("c"+itoa(i), "a"))
		w := h.expectTools()
		h.mustAdmit(toolResult(h.tick(), w, w.Calls[0].CallID, core.CallOK, `{"ok":true}`))
		if i%5 == 0 {
			h.mustAdmit(core.Steer{AtMs: h.tick(), SteeringID: "s" + itoa(i), Input: input("also this")})
		}
		h.answer("answer " + itoa(i))
		if i%5 == 0 {
			h.answer("answer to steering " + itoa(i))
		}
	}
	return h.events[:n] // every prefix of a log is a valid log
}

// BenchmarkReplay10k measures a full replay of a 10,000-event session.
func BenchmarkReplay10k(b *testing.B) {
	events := replaySession(b, 10_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := core.Replay(events)
		if err != nil {
			b.Fatal(err)
		}
		if s.Head != 10_000 {
			b.Fatalf("head %d", s.Head)
		}
	}
}

// BenchmarkPlanFingerprint2000 measures the fingerprint of a 2,000-entry
// context, which every planned turn and every request built computes.
func BenchmarkPlanFingerprint2000(b *testing.B) {
	es := make([]core.Entry, 2000)
	for i := range es {
		es[i] = core.Entry{ID: core.EntryID(int64(i + 1)), Kind: core.EntryMessage, Role: core.RoleUser,
			Content: content.ContentRef{Digest: content.Sum([]byte(core.EntryID(int64(i)))), MediaType: content.MediaText}}
	}
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"}}
	b.ReportAllocs()
	for b.Loop() {
		core.PlanFingerprint(cfg, es)
	}
}

// BenchmarkCheckpointAfter28Turns measures the chunked checkpoint a host
// writes every few dozen turns of a long chat: the session has had 5,000
// turns (10,000 entries, 5,000 runs) when the last checkpoint was written,
// and 28 more since.
func BenchmarkCheckpointAfter28Turns(b *testing.B) {
	h := newHarness(b, testConfig())
	turn := func() {
		i := h.state().EntryCount()
		h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r" + itoa(i), Input: input("question " + itoa(i))})
		h.answer("answer " + itoa(i))
	}
	for range 5000 {
		turn()
	}
	last, err := core.EncodeCheckpointParts(h.state(), nil)
	if err != nil {
		b.Fatal(err)
	}
	for range 28 {
		turn()
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := core.EncodeCheckpointParts(h.state(), last.Memo); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeCheckpoint5000Turns measures what a host does to a long
// chat's checkpoint when the session is loaded again (after a restart or
// an idle eviction): 10,000 entries and 5,000 runs.
func BenchmarkDecodeCheckpoint5000Turns(b *testing.B) {
	h := newHarness(b, testConfig())
	for i := range 5000 {
		h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r" + itoa(i), Input: input("question " + itoa(i))})
		h.answer("answer " + itoa(i))
	}
	parts, err := core.EncodeCheckpointParts(h.state(), nil)
	if err != nil {
		b.Fatal(err)
	}
	chunks := map[content.Digest][]byte{}
	for _, c := range parts.New {
		chunks[c.Digest] = c.Data
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := core.DecodeCheckpointParts(parts.Index, chunks); err != nil {
			b.Fatal(err)
		}
	}
}
