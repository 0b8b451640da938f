package core_test

import (
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

func approvalConfig() core.SessionConfig {
	cfg := clientConfig() // search (built-in) and lookup (client)
	cfg.Approvals = []core.ToolApproval{{Tool: "lookup", Policy: core.ApprovalAlways}, {Tool: "search", Policy: core.ApprovalAlways}}
	return cfg
}

// Calls that need approval wait before they run: an approved built-in call
// runs, an approved client call then waits for the client, a denied one
// gives the model an error result with the reason; the same decision twice
// is a no-op and the other one a conflict.
func TestApprovals_CallsWaitForADecision(t *testing.T) {
	h := newHarness(t, approvalConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("check")})
	h.callTools(call("c1", "search"), call("c2", "lookup"), call("c3", "search"))
	h.expectIdle() // nothing runs before a decision
	// Nor can a host's result answer a call nobody approved.
	h.rejection(core.ToolResult{AtMs: h.tick(), RunID: "r1", Turn: 1, CallID: "c1", Status: core.CallOK, Result: entryText(core.EntryToolResult, "", "x")}, core.RejectStaleResult)
	r := h.state().Run("r1")
	if r.ShownStatus() != core.StatusAwaitingApproval || len(r.PendingApprovals()) != 3 {
		t.Fatalf("status %s, %d pending approvals", r.ShownStatus(), len(r.PendingApprovals()))
	}
	// The client cannot answer a call that waits for a decision.
	h.rejection(core.SubmitToolOutput{AtMs: h.tick(), CallID: "c2", Result: entryText(core.EntryToolResult, "", "x")}, core.RejectUnknownCall)

	h.mustAdmit(core.DecideApproval{AtMs: h.tick(), CallID: "c1", Approve: true})
	w := h.expectTools()
	if len(w.Calls) != 1 || w.Calls[0].CallID != "c1" {
		t.Fatalf("after approving c1 the host runs %v", w.Calls)
	}
	n := len(h.events)
	h.mustAdmit(core.DecideApproval{AtMs: h.tick(), CallID: "c1", Approve: true}) // again: nothing
	if len(h.events) != n {
		t.Fatal("the same decision twice wrote events")
	}
	h.rejection(core.DecideApproval{AtMs: h.tick(), CallID: "c1", Reason: "changed my mind", Result: entryText(core.EntryToolResult, "", "denied")}, core.RejectApprovalConflict)
	h.rejection(core.DecideApproval{AtMs: h.tick(), CallID: "c3"}, core.RejectInvalidInput) // a denial needs its result
	h.rejection(core.DecideApproval{AtMs: h.tick(), CallID: "nope", Approve: true}, core.RejectUnknownCall)

	h.mustAdmit(core.DecideApproval{AtMs: h.tick(), CallID: "c2", Approve: true})
	if !slices.Contains(h.kinds(), core.KindToolCallAwaiting) || h.state().Run("r1").ShownStatus() != core.StatusAwaitingApproval {
		t.Fatalf("an approved client call does not wait for the client: %v", h.kinds())
	}
	h.mustAdmit(core.DecideApproval{AtMs: h.tick(), CallID: "c3", Reason: "not now", Result: entryText(core.EntryToolResult, "", "denied: not now")})
	if got := h.state().Run("r1").ShownStatus(); got != core.StatusAwaitingTools {
		t.Fatalf("status %s once every decision is made and the client's call waits", got)
	}
	h.mustAdmit(toolResult(h.tick(), w, "c1", core.CallOK, "found"))
	h.mustAdmit(core.SubmitToolOutput{AtMs: h.tick(), CallID: "c2", Result: entryText(core.EntryToolResult, "", "ticket 7: open")})
	g := h.expectGenerate()
	var results []string
	for _, e := range g.Entries {
		if e.Kind == core.EntryToolResult {
			results = append(results, e.CallID+"="+e.Preview)
		}
	}
	requireKinds(t, results, "c1=found", "c2=ticket 7: open", "c3=denied: not now")
	for _, c := range h.state().Run("r1").Turn.Calls {
		if c.CallID == "c3" && c.Status != core.CallError {
			t.Fatalf("the denied call completed as %s", c.Status)
		}
	}
}

func TestApprovals_ConfigIsChecked(t *testing.T) {
	for name, approvals := range map[string][]core.ToolApproval{
		"not granted":    {{Tool: "deploy", Policy: core.ApprovalAlways}},
		"unknown policy": {{Tool: "search", Policy: "sometimes"}},
		"not sorted":     {{Tool: "search", Policy: core.ApprovalAlways}, {Tool: "lookup", Policy: core.ApprovalAlways}},
		"twice":          {{Tool: "search", Policy: core.ApprovalAlways}, {Tool: "search", Policy: core.ApprovalAlways}},
	} {
		cfg := approvalConfig()
		cfg.Approvals = approvals
		if err := core.ValidateConfig(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
