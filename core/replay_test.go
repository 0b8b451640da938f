package core_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

func TestReplay_OfNoEventsIsAFreshState(t *testing.T) {
	s, err := core.Replay(nil)
	if err != nil || !reflect.DeepEqual(s, core.NewState()) {
		t.Fatalf("%+v %v", s, err)
	}
}

func TestReplay_EqualsLiveStateAtEveryPrefix(t *testing.T) {
	h := lifecycleScenario(t)
	live := core.NewState()
	for i, ev := range h.events {
		if err := live.Apply(ev); err != nil {
			t.Fatal(err)
		}
		s, err := core.Replay(h.events[:i+1])
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(s, live) {
			t.Fatalf("prefix %d differs", i+1)
		}
	}
	if !reflect.DeepEqual(live, h.state()) {
		t.Fatal("replay differs from the drive's state")
	}
}

func TestReplay_DamagedLogIsACorruptError(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.answer("a")
	good := h.events

	with := func(i int, f func(ev *core.Event)) []core.Event {
		evs := append([]core.Event(nil), good...)
		f(&evs[i])
		return evs
	}
	firstOf := func(kind string) int {
		for i, ev := range good {
			if ev.Kind == kind {
				return i
			}
		}
		t.Fatalf("no %s", kind)
		return -1
	}
	rewrite := func(i int, edit func(m map[string]any)) []core.Event {
		return with(i, func(ev *core.Event) {
			var m map[string]any
			if err := json.Unmarshal(ev.Payload, &m); err != nil {
				t.Fatal(err)
			}
			edit(m)
			ev.Payload, _ = json.Marshal(m)
		})
	}
	cases := map[string][]core.Event{
		"gap in seqs":          append(append([]core.Event(nil), good[:2]...), good[3:]...),
		"seq not from 1":       good[1:],
		"unknown version":      with(3, func(ev *core.Event) { ev.Version = 2 }),
		"unknown kind":         with(3, func(ev *core.Event) { ev.Kind = "run.exploded" }),
		"payload not json":     with(2, func(ev *core.Event) { ev.Payload = json.RawMessage(`{`) }),
		"open twice":           with(1, func(ev *core.Event) { *ev = good[0]; ev.Seq = 2 }),
		"stale base revision":  rewrite(firstOf(core.KindContextEntriesApplied), func(m map[string]any) { m["baseRevision"] = 5 }),
		"planned at other rev": rewrite(firstOf(core.KindTurnPlanned), func(m map[string]any) { m["contextRevision"] = 0 }),
		"turn for unknown run": rewrite(firstOf(core.KindTurnStarted), func(m map[string]any) { m["runId"] = "ghost" }),
		"turn skips a number":  rewrite(firstOf(core.KindTurnStarted), func(m map[string]any) { m["turn"] = 2 }),
		"entry without id":     rewrite(1, func(m map[string]any) { m["entries"].([]any)[0].(map[string]any)["entryId"] = "" }),
		"bad digest in entry": rewrite(1, func(m map[string]any) {
			m["entries"].([]any)[0].(map[string]any)["content"].(map[string]any)["digest"] = "sha256:XYZ"
		}),
		"event before open": func() []core.Event { ev := good[2]; ev.Seq = 1; return []core.Event{ev} }(),
		"run accepted twice": func() []core.Event {
			n := firstOf(core.KindTurnStarted)
			again := good[firstOf(core.KindRunAccepted)]
			again.Seq = int64(n + 1)
			return append(append([]core.Event(nil), good[:n]...), again)
		}(),
	}
	for name, evs := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := core.Replay(evs)
			var corrupt *core.CorruptError
			if !errors.As(err, &corrupt) {
				t.Fatalf("got %v, want a CorruptError", err)
			}
		})
	}
}
