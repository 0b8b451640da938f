package core_test

import (
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

func clientConfig() core.SessionConfig {
	cfg := testConfig("search", "lookup")
	cfg.ClientTools = []core.ClientTool{{Name: "lookup", Description: "Look a ticket up.", Parameters: []byte(`{"type": "object"}`)}}
	return cfg
}

// A batch with a built-in and a client call: the host runs only the
// built-in one, the run then waits for the client, and the next request
// carries both results in the order the model called them.
func TestClientTools_ABatchParksUntilTheClientAnswers(t *testing.T) {
	h := newHarness(t, clientConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("check ticket 7 and search the docs")})
	h.callTools(call("c1", "lookup"), call("c2", "search"))
	if !slices.Contains(h.kinds(), core.KindToolCallAwaiting) {
		t.Fatalf("no %s event: %v", core.KindToolCallAwaiting, h.kinds())
	}
	w := h.expectTools()
	if len(w.Calls) != 1 || w.Calls[0].CallID != "c2" {
		t.Fatalf("the host is asked to run %v; want only the built-in call c2", w.Calls)
	}
	h.mustAdmit(toolResult(h.tick(), w, "c2", core.CallOK, "docs say: yes"))
	h.expectIdle() // the client's call is all that is left
	// Steering while the batch waits applies at the next boundary, after it.
	h.mustAdmit(core.Steer{AtMs: h.tick(), SteeringID: "st1", Input: input("be quick")})
	h.expectIdle()
	if r := h.state().Run("r1"); r.Status != core.StatusRunning || r.Turn.BatchCompleted {
		t.Fatalf("run %s, batch completed %v; want it running and parked", r.Status, r.Turn.BatchCompleted)
	}
	// The host's own result type cannot answer a client's call.
	h.rejection(core.ToolResult{AtMs: h.tick(), RunID: "r1", Turn: 1, CallID: "c1", Status: core.CallOK, Result: entryText(core.EntryToolResult, "", "x")}, core.RejectStaleResult)
	h.mustAdmit(core.SubmitToolOutput{AtMs: h.tick(), CallID: "c1", Result: entryText(core.EntryToolResult, "", "ticket 7: open")})
	g := h.expectGenerate()
	var results []string
	for _, e := range g.Entries {
		if e.Kind == core.EntryToolResult {
			results = append(results, e.CallID)
		}
	}
	if !slices.Equal(results, []string{"c1", "c2"}) {
		t.Fatalf("the next request's results are for %v; want c1, c2 (the model's order)", results)
	}
	if last := g.Entries[len(g.Entries)-1]; last.Kind != core.EntryMessage || last.Preview != "be quick" {
		t.Fatalf("the steering is not the last entry after the batch's results: %+v", last)
	}
}

// A client result for an unknown call, a built-in call, an answered call
// or a call of a run that ended is refused with its own kind and changes
// nothing; a run waits for its client and can still be cancelled.
func TestClientTools_ResultsOnlyForCallsThatWait(t *testing.T) {
	h := newHarness(t, clientConfig())
	out := entryText(core.EntryToolResult, "", "ticket 7: open")
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("check")})
	h.callTools(call("c1", "lookup"), call("c2", "lookup"), call("c3", "search"))
	h.rejection(core.SubmitToolOutput{AtMs: h.tick(), CallID: "nope", Result: out}, core.RejectUnknownCall)
	h.rejection(core.SubmitToolOutput{AtMs: h.tick(), CallID: "c3", Result: out}, core.RejectUnknownCall)
	h.rejection(core.SubmitToolOutput{AtMs: h.tick(), Result: out}, core.RejectInvalidInput)
	h.mustAdmit(core.SubmitToolOutput{AtMs: h.tick(), CallID: "c1", IsError: true, Result: out})
	h.rejection(core.SubmitToolOutput{AtMs: h.tick(), CallID: "c1", Result: out}, core.RejectCallAnswered)
	if c := h.state().Run("r1").Turn.Calls[0]; c.Status != core.CallError {
		t.Fatalf("an isError result completed as %s", c.Status)
	}
	h.mustAdmit(core.CancelRun{AtMs: h.tick(), RunID: "r1", Reason: "enough"})
	if r := h.state().Run("r1"); r.Status != core.StatusCancelled {
		t.Fatalf("run %s after cancel", r.Status)
	}
	h.rejection(core.SubmitToolOutput{AtMs: h.tick(), CallID: "c2", Result: out}, core.RejectUnknownCall)
}

func TestClientTools_DefinitionsAreChecked(t *testing.T) {
	for name, mutate := range map[string]func(*core.SessionConfig){
		"not granted":       func(c *core.SessionConfig) { c.Tools = []string{"search"} },
		"bad name":          func(c *core.SessionConfig) { c.ClientTools[0].Name, c.Tools[1] = "look up", "look up" },
		"defined twice":     func(c *core.SessionConfig) { c.ClientTools = append(c.ClientTools, c.ClientTools[0]) },
		"parameters array":  func(c *core.SessionConfig) { c.ClientTools[0].Parameters = []byte(`[]`) },
		"parameters absent": func(c *core.SessionConfig) { c.ClientTools[0].Parameters = nil },
		"parameters broken": func(c *core.SessionConfig) { c.ClientTools[0].Parameters = []byte(`{"type":`) },
	} {
		cfg := clientConfig()
		cfg.ClientTools = slices.Clone(cfg.ClientTools)
		mutate(&cfg)
		if err := core.ValidateConfig(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		} else if rej, ok := err.(*core.Rejection); !ok || rej.Kind != core.RejectInvalidConfiguration {
			t.Errorf("%s: %v, want %s", name, err, core.RejectInvalidConfiguration)
		}
	}
	if err := core.ValidateConfig(clientConfig()); err != nil {
		t.Fatalf("a valid client tool: %v", err)
	}
}

// A client's call with a timeout has a deadline its host arms; expiring
// it before then is stale, at the deadline it completes with the constant
// "timed out" error result, and an answered call has no deadline.
func TestClientTools_ACallExpiresAtItsDeadline(t *testing.T) {
	cfg := clientConfig()
	cfg.ClientTools[0].TimeoutMs = 100
	h := newHarness(t, cfg)
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("check")})
	h.callTools(call("c1", "lookup"), call("c2", "lookup"))
	ds := h.state().ToolDeadlines()
	if len(ds) != 2 || ds[0].CallID != "c1" || ds[1].CallID != "c2" || ds[0].AtMs != ds[1].AtMs {
		t.Fatalf("deadlines %+v", ds)
	}
	due := ds[0].AtMs
	h.rejection(core.ExpireToolCall{AtMs: due - 1, CallID: "c1"}, core.RejectStaleResult)
	h.mustAdmit(core.SubmitToolOutput{AtMs: due - 1, CallID: "c2", Result: entryText(core.EntryToolResult, "", "answered in time")})
	if ds := h.state().ToolDeadlines(); len(ds) != 1 || ds[0].CallID != "c1" {
		t.Fatalf("deadlines after c2 was answered: %+v", ds)
	}
	h.rejection(core.ExpireToolCall{AtMs: due, CallID: "c2"}, core.RejectStaleResult)
	h.mustAdmit(core.ExpireToolCall{AtMs: due, CallID: "c1"})
	g := h.expectGenerate()
	var results []string
	for _, e := range g.Entries {
		if e.Kind == core.EntryToolResult {
			results = append(results, e.CallID+"="+e.Preview)
		}
	}
	requireKinds(t, results, "c1=timed out", "c2=answered in time")
	if g.Turn != 2 {
		t.Fatalf("the next generation is of turn %d, want 2", g.Turn)
	}
}
