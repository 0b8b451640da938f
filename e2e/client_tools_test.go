package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// A client tool that needs approval, on Temporal: the model's call parks
// the run (no worker holds it: the workflow waits for an update), a person
// approves it through the gateway, the worker is SIGKILLed, the client
// submits the result to the gateway, and another worker finishes the run
// with it.
func TestE2E_TemporalClientToolSurvivesItsWorker(t *testing.T) {
	fake := newFakeChat(t, fakeKey)
	fake.script(
		fakeStep{body: toolCallResponse("chatcmpl-c1", "call_1", "lookup", `{"number":7}`)},
		fakeStep{body: textResponse("chatcmpl-c2", "Ticket 7 is open.")},
	)
	d := newTemporalDeployment(t, fake)
	w1 := d.startWorker(t, "worker-1", cairnBin)
	c := d.client()
	ctx := context.Background()
	lookup := api.ClientTool{Name: "lookup", Description: "Look a ticket up.", Parameters: json.RawMessage(`{"type":"object","properties":{"number":{"type":"integer"}}}`)}
	created, err := c.CreateSession(ctx, api.CreateSessionParams{SessionID: "tickets", Model: fakeModel(), Tools: []string{"lookup"}, ClientTools: []api.ClientTool{lookup},
		Approvals: map[string]string{"lookup": core.ApprovalAlways}})
	if err != nil {
		t.Fatal(err)
	}
	sid := created.SessionID
	run, err := c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: textInput("What is ticket 7?")})
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, c, sid, isEvent(core.KindToolApprovalRequested, "call_1"))
	if read, err := c.ReadSession(ctx, sid); err != nil || read.ActiveRun == nil || read.ActiveRun.Status != core.StatusAwaitingApproval {
		t.Fatalf("session/read while the call waits for approval: %s, %v", mustJSON(t, read), err)
	}
	if _, err := c.DecideApproval(ctx, api.ApprovalDecideParams{SessionID: sid, CallID: "call_1", Approve: true, Reason: "fine"}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, c, sid, isEvent(core.KindToolCallAwaiting, "call_1"))
	if r, err := c.ReadRun(ctx, sid, run.RunID); err != nil || r.Status != core.StatusAwaitingTools {
		t.Fatalf("run while its call waits: %+v, %v", r, err)
	}
	pending, err := c.PendingTools(ctx, sid)
	if err != nil || len(pending.Calls) != 1 || pending.Calls[0].CallID != "call_1" || pending.Calls[0].Arguments != `{"number":7}` {
		t.Fatalf("pending %+v, %v", pending, err)
	}

	w1.kill(t)
	d.startWorker(t, "worker-2", cairnBin)
	if _, err := c.SubmitTool(ctx, api.ToolSubmitParams{SessionID: sid, CallID: "call_1", Output: &api.ToolOutput{Text: "ticket 7: open since Monday"}}); err != nil {
		t.Fatal(err)
	}
	got := waitRun(t, c, sid, run.RunID)
	if got.Status != core.StatusCompleted || got.Output == nil || got.Output.VisibleText() != "Ticket 7 is open." {
		t.Fatalf("run = %s", mustJSON(t, got))
	}
	reqs := fake.bodies()
	if len(reqs) != 2 || !bytes.Contains(reqs[1], []byte(`"tool_call_id":"call_1","content":"ticket 7: open since Monday"`)) {
		t.Fatalf("the second request lacks the client's result: %s", reqs[len(reqs)-1])
	}
	if !bytes.Contains(reqs[0], []byte(`"name":"lookup","description":"Look a ticket up."`)) {
		t.Fatalf("the client tool was not offered: %s", reqs[0])
	}
}
