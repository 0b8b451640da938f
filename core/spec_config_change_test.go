package core_test

import (
	"testing"

	"github.com/cairn-agents/cairn/core"
)

// A config change asked for while a run is active waits for the next idle
// boundary: the active run keeps its config to its end, the change applies
// before the queued run starts, and it survives a checkpoint meanwhile. A
// later request replaces an earlier one.
func TestSpec_ConfigChangeDuringARunAppliesAtTheNextIdleBoundary(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q1")})
	h.callTools(call("c1", "a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("q2")}) // queued

	first := testConfig("a")
	first.Model.Model = "first"
	if a := h.mustAdmit(core.ChangeConfig{AtMs: h.tick(), Config: first}); !a.ConfigPending {
		t.Fatalf("a change during a run was admitted %+v, want it pending", a)
	}
	second := testConfig("a")
	second.Model.Model = "second"
	instr := entryText(core.EntryInstructions, "", "be terse")
	rev := h.state().ConfigRevision
	h.rejection(core.ChangeConfig{AtMs: h.tick(), Config: second, ExpectedRevision: &[]int64{rev + 1}[0]}, core.RejectRevisionConflict)
	h.mustAdmit(core.ChangeConfig{AtMs: h.tick(), Config: second, Instructions: &instr, ExpectedRevision: &rev})
	if h.state().ConfigRevision != rev || h.state().PendingConfig == nil {
		t.Fatalf("the change applied during the run: revision %d, pending %v", h.state().ConfigRevision, h.state().PendingConfig)
	}
	data, err := core.EncodeCheckpoint(h.state())
	if err != nil {
		t.Fatal(err)
	}
	if restored, err := core.DecodeCheckpoint(data); err != nil || restored.PendingConfig == nil || restored.PendingConfig.Config.Model.Model != "second" {
		t.Fatalf("the pending change after a checkpoint: %+v, %v", restored, err)
	}

	w := h.expectTools()
	h.mustAdmit(toolResult(h.tick(), w, "c1", core.CallOK, "x"))
	if g := h.expectGenerate(); g.RunID != "r1" || g.Config.Model.Model != "gpt-test" {
		t.Fatalf("r1's second turn asks %s with model %s: the run changed config mid-way", g.RunID, g.Config.Model.Model)
	}
	h.mustAdmit(core.GenerationResult{AtMs: h.tick(), RunID: "r1", Turn: 2, Entries: []core.EntryInput{assistant("done")}, Finish: "stop"})
	g := h.expectGenerate()
	if g.RunID != "r2" || g.Config.Model.Model != "second" {
		t.Fatalf("the queued run asks %s with model %s, want r2 with the second change", g.RunID, g.Config.Model.Model)
	}
	if h.state().PendingConfig != nil || h.state().ConfigRevision != rev+1 {
		t.Fatalf("after the boundary: pending %v, revision %d", h.state().PendingConfig, h.state().ConfigRevision)
	}
	var instructions []string
	for _, e := range g.Entries {
		if e.Kind == core.EntryInstructions && e.Key == "instructions.main" {
			instructions = append(instructions, e.Preview)
		}
	}
	if len(instructions) != 1 || instructions[0] != "be terse" {
		t.Fatalf("r2's main instructions: %q", instructions)
	}
}
