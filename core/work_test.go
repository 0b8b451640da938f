package core_test

import (
	"testing"

	"github.com/cairn-agents/cairn/core"
)

// A host cancels in-flight work once the state no longer awaits it.
func TestAwaitsOnlyOpenWork(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	g := h.expectGenerate()
	gen := core.Work{RunID: g.RunID, Turn: g.Turn}
	if !h.state().Awaits(gen) || h.state().Awaits(core.Work{RunID: "r1", Turn: 2}) || h.state().Awaits(core.Work{RunID: "r9", Turn: 1}) {
		t.Fatal("awaits the wrong generation")
	}
	h.callTools(call("c1", "a"))
	w := h.expectTools()
	tool := core.Work{RunID: w.RunID, Turn: w.Turn, CallID: "c1"}
	if h.state().Awaits(gen) || !h.state().Awaits(tool) || h.state().Awaits(core.Work{RunID: "r1", Turn: 1, CallID: "c2"}) {
		t.Fatal("after the generation: awaits the wrong work")
	}
	h.mustAdmit(core.CancelRun{AtMs: h.tick(), RunID: "r1"})
	if h.state().Awaits(tool) {
		t.Fatal("awaits a call of a cancelled run")
	}
	h.mustAdmit(core.RequestCompaction{AtMs: h.tick(), CompactionID: "k1"})
	h.next()
	if !h.state().Awaits(core.Work{CompactionID: "k1"}) || h.state().Awaits(core.Work{CompactionID: "k0"}) {
		t.Fatal("awaits the wrong compaction")
	}
	keys := map[string]bool{}
	for _, k := range []core.Work{gen, tool, {CompactionID: "k1"}, {RunID: "r1", Transcription: true}} {
		keys[k.Key()] = true
	}
	if len(keys) != 4 {
		t.Fatalf("work keys collide: %v", keys)
	}
}
