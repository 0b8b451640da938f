package core_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

// Every rejection is typed and changes nothing: neither the state (compared
// deep, unexported fields included) nor the log, and it leaves nothing pending.
func TestSpec_EveryRejectionLeavesStateUnchanged(t *testing.T) {
	type setup func(h *harness)
	idle := func(h *harness) {}
	generating := func(h *harness) {
		h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", SubmissionID: "sub", Input: input("q")})
		h.expectGenerate()
	}
	inBatch := func(h *harness) {
		generating(h)
		h.callTools(call("c1", "a"))
		h.expectTools()
	}
	closed := func(h *harness) { h.mustAdmit(core.CloseSession{AtMs: h.tick()}) }
	badCfg := testConfig("a")
	badCfg.Model.APIKind = core.APIOpenAIResponses
	msg := []core.EntryInput{entryText(core.EntryMessage, "", "m")}

	cases := []struct {
		name  string
		setup setup
		cmd   core.Command
		kind  string
	}{
		{"open twice", idle, core.OpenSession{SessionID: "s1", Config: testConfig()}, core.RejectSessionExists},
		{"change api kind", idle, core.ChangeConfig{Config: badCfg}, core.RejectInvalidConfiguration},
		{"invalid config", idle, core.ChangeConfig{Config: core.SessionConfig{}}, core.RejectInvalidConfiguration},
		{"stale revision append", idle, core.AppendContext{Entries: msg, ExpectedRevision: rev(0)}, core.RejectRevisionConflict},
		{"stale revision remove", idle, core.RemoveContext{Keys: []string{"instructions.main"}, ExpectedRevision: rev(5)}, core.RejectRevisionConflict},
		{"instructions without key", idle, core.AppendContext{Entries: []core.EntryInput{entryText(core.EntryInstructions, "", "x")}}, core.RejectInvalidInput},
		{"remove unknown key", idle, core.RemoveContext{Keys: []string{"nope"}}, core.RejectUnknownReference},
		{"steer without run", idle, core.Steer{SteeringID: "s", Input: input("x")}, core.RejectNoActiveRun},
		{"cancel unknown run", idle, core.CancelRun{RunID: "nope"}, core.RejectUnknownReference},
		{"generation without run", idle, core.GenerationResult{RunID: "r1", Turn: 1}, core.RejectStaleResult},
		{"tool result without run", idle, core.ToolResult{RunID: "r1", Turn: 1, CallID: "c1", Status: core.CallOK}, core.RejectStaleResult},
		{"empty run input", idle, core.StartRun{RunID: "r1"}, core.RejectInvalidInput},
		{"append during run", generating, core.AppendContext{Entries: msg}, core.RejectActiveWork},
		{"remove during run", generating, core.RemoveContext{Keys: []string{"instructions.main"}}, core.RejectActiveWork},
		{"close during run", generating, core.CloseSession{}, core.RejectActiveWork},
		{"config of another API kind during run", generating, core.ChangeConfig{Config: badCfg}, core.RejectInvalidConfiguration},
		{"duplicate submission", generating, core.StartRun{RunID: "r2", SubmissionID: "sub", Input: input("other")}, core.RejectDuplicateSubmission},
		{"reused run id", generating, core.StartRun{RunID: "r1", Input: input("other")}, core.RejectInvalidInput},
		{"generation for wrong turn", generating, core.GenerationResult{RunID: "r1", Turn: 2}, core.RejectStaleResult},
		{"tool result during generation", generating, core.ToolResult{RunID: "r1", Turn: 1, CallID: "c1", Status: core.CallOK, Result: entryText(core.EntryToolResult, "", "x")}, core.RejectStaleResult},
		{"generation during tool batch", inBatch, core.GenerationResult{RunID: "r1", Turn: 1, Entries: []core.EntryInput{assistant("again")}}, core.RejectStaleResult},
		{"tool result bad status", inBatch, core.ToolResult{RunID: "r1", Turn: 1, CallID: "c1", Status: "great", Result: entryText(core.EntryToolResult, "", "x")}, core.RejectInvalidInput},
		{"tool result unknown call", inBatch, core.ToolResult{RunID: "r1", Turn: 1, CallID: "c9", Status: core.CallOK, Result: entryText(core.EntryToolResult, "", "x")}, core.RejectStaleResult},
		{"start run on closed", closed, core.StartRun{RunID: "r1", Input: input("q")}, core.RejectSessionClosed},
		{"append on closed", closed, core.AppendContext{Entries: msg}, core.RejectSessionClosed},
		{"close on closed", closed, core.CloseSession{}, core.RejectSessionClosed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, testConfig("a"))
			c.setup(h)
			headBefore := len(h.events)
			h.rejection(c.cmd, c.kind) // checks state deep-equal and nothing pending

			// The pure function agrees and does not touch its argument either.
			snap := h.snapshot()
			a, err := core.Admit(h.state(), c.cmd)
			var rej *core.Rejection
			if !errors.As(err, &rej) || rej.Kind != c.kind || len(a.Proposals) != 0 {
				t.Fatalf("core.Admit: %+v %v", a, err)
			}
			if !reflect.DeepEqual(snap, h.state()) || len(h.events) != headBefore {
				t.Fatal("core.Admit changed the state")
			}
		})
	}
}
