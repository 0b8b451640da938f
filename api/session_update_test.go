package api_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// session/update changes the model, tools, instructions, parameters and
// compaction of an idle session as one config event with its own revision;
// the next run uses them. A stale revision, another API kind and a busy
// session are refused and change nothing.
func TestSessionUpdateChangesTheNextRunsConfiguration(t *testing.T) {
	e := newSQLiteEnv(t)
	created, err := e.c.CreateSession(bg, api.CreateSessionParams{SessionID: "u", Instructions: "Be brief.",
		Model: core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "fake-1"}})
	if err != nil {
		t.Fatal(err)
	}
	sid := created.SessionID
	if r := e.read(t, sid); r.ConfigRevision != 1 {
		t.Fatalf("a new session's config revision is %d", r.ConfigRevision)
	}
	tools := []string{"vfs_read_file"}
	instructions := "Answer in French."
	res, err := e.c.UpdateSession(bg, api.SessionUpdateParams{SessionID: sid, Model: &core.ModelSelection{ProviderID: "fake", Model: "fake-2"},
		Tools: &tools, Instructions: &instructions, Compaction: &core.Compaction{Mode: core.CompactionProviderStandalone, ThresholdTokens: 5000}})
	if err != nil || res.ConfigRevision != 2 {
		t.Fatalf("session/update: %+v, %v", res, err)
	}
	r := e.read(t, sid)
	if r.ConfigRevision != 2 || r.Model.Model != "fake-2" || len(r.Tools) != 1 || r.Tools[0] != "vfs_read_file" {
		t.Fatalf("after the update session/read gives %+v", r)
	}
	var instr []string
	for _, en := range e.context(t, sid).Entries {
		if en.Kind == core.EntryInstructions {
			instr = append(instr, en.Preview)
		}
	}
	if len(instr) != 1 || instr[0] != instructions {
		t.Fatalf("instructions in context after the update: %q", instr)
	}

	stale := int64(1)
	if _, err := e.c.UpdateSession(bg, api.SessionUpdateParams{SessionID: sid, Tools: &[]string{}, ExpectedRevision: &stale}); !isKind(err, core.RejectRevisionConflict) {
		t.Fatalf("an update of a stale revision: %v", err)
	}
	if _, err := e.c.UpdateSession(bg, api.SessionUpdateParams{SessionID: sid, Model: &core.ModelSelection{ProviderID: "fake", APIKind: core.APIAnthropicMessages, Model: "claude"}}); !isKind(err, core.RejectInvalidConfiguration) {
		t.Fatalf("an update to another API kind: %v", err)
	}
	if _, err := e.c.UpdateSession(bg, api.SessionUpdateParams{SessionID: sid, ProviderParams: json.RawMessage(`{"version":1,"nope":true}`)}); err == nil {
		t.Fatal("unknown provider parameters were accepted")
	}
	if r := e.read(t, sid); r.ConfigRevision != 2 {
		t.Fatalf("refused updates moved the config to revision %d", r.ConfigRevision)
	}

	run, err := e.c.StartRun(bg, api.RunStartParams{SessionID: sid, Input: []api.InputPart{{Type: "text", Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, sid, run.RunID, core.StatusCompleted)
	if req := e.model.request(e.model.calls() - 1); req.Model.Model != "fake-2" || len(req.Tools) != 1 {
		t.Fatalf("the next run asked model %q with %d tools", req.Model.Model, len(req.Tools))
	}

	e.model.setHold(true)
	next := e.model.calls() // the held call's number, taken before it can start
	held, err := e.c.StartRun(bg, api.RunStartParams{SessionID: sid, Input: []api.InputPart{{Type: "text", Text: "wait"}}})
	if err != nil {
		t.Fatal(err)
	}
	e.model.waitArrived(t, next)
	// During a run the change waits for it to end.
	busy, err := e.c.UpdateSession(bg, api.SessionUpdateParams{SessionID: sid, Model: &core.ModelSelection{ProviderID: "fake", Model: "fake-3"}})
	if err != nil || !busy.Pending || busy.ConfigRevision != 3 {
		t.Fatalf("an update while a run is active: %+v, %v", busy, err)
	}
	if r := e.read(t, sid); r.Model.Model != "fake-2" || r.ConfigRevision != 2 {
		t.Fatalf("the update applied during the run: %+v", r)
	}
	e.model.releaseOne(t)
	e.waitStatus(t, sid, held.RunID, core.StatusCompleted)
	deadline := time.Now().Add(10 * time.Second)
	for r := e.read(t, sid); r.Model.Model != "fake-3" || r.ConfigRevision != 3; r = e.read(t, sid) {
		if time.Now().After(deadline) {
			t.Fatalf("after the run the session reads %+v, want model fake-3 at revision 3", r)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Fork and clone take session/update's changes: the clone is created with
// them, the fork gets them as its first event after the fork point; a
// change the server refuses makes neither.
func TestForkAndCloneTakeConfigurationChanges(t *testing.T) {
	e := newSQLiteEnv(t)
	created, err := e.c.CreateSession(bg, api.CreateSessionParams{SessionID: "src", Instructions: "Be brief.",
		Model: core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "fake-1"}})
	if err != nil {
		t.Fatal(err)
	}
	other := "Be thorough."
	var clone api.SessionCloneResult
	if err := e.c.Call(bg, api.MethodSessionClone, api.SessionCloneParams{SessionID: created.SessionID, Model: &core.ModelSelection{ProviderID: "fake", Model: "fake-2"}, Instructions: &other}, &clone); err != nil {
		t.Fatal(err)
	}
	if r := e.read(t, clone.SessionID); r.Model.Model != "fake-2" {
		t.Fatalf("the clone's model is %q", r.Model.Model)
	}
	var fork api.SessionForkResult
	if err := e.c.Call(bg, api.MethodSessionFork, api.SessionForkParams{SessionID: created.SessionID, Model: &core.ModelSelection{ProviderID: "fake", Model: "fake-3"}, Instructions: &other}, &fork); err != nil {
		t.Fatal(err)
	}
	if r := e.read(t, fork.SessionID); r.Model.Model != "fake-3" || r.ConfigRevision != 2 {
		t.Fatalf("the fork reads %+v", r)
	}
	for _, id := range []string{clone.SessionID, fork.SessionID} {
		var instr []string
		for _, en := range e.context(t, id).Entries {
			if en.Kind == core.EntryInstructions {
				instr = append(instr, en.Preview)
			}
		}
		if len(instr) != 1 || instr[0] != other {
			t.Fatalf("%s's instructions: %q", id, instr)
		}
	}
	if r := e.read(t, created.SessionID); r.Model.Model != "fake-1" || r.ConfigRevision != 1 {
		t.Fatalf("the source changed: %+v", r)
	}
	before, err := e.c.ListSessions(bg, api.SessionListParams{})
	if err != nil {
		t.Fatal(err)
	}
	bad := &core.ModelSelection{ProviderID: "fake", APIKind: core.APIOpenAIResponses, Model: "x"}
	if err := e.c.Call(bg, api.MethodSessionFork, api.SessionForkParams{SessionID: created.SessionID, Model: bad}, nil); !isKind(err, core.RejectInvalidConfiguration) {
		t.Fatalf("a fork to another API kind: %v", err)
	}
	if err := e.c.Call(bg, api.MethodSessionClone, api.SessionCloneParams{SessionID: created.SessionID, Model: bad}, nil); !isKind(err, core.RejectInvalidConfiguration) {
		t.Fatalf("a clone to another API kind: %v", err)
	}
	if after, err := e.c.ListSessions(bg, api.SessionListParams{}); err != nil || len(after.Sessions) != len(before.Sessions) {
		t.Fatalf("refused forks and clones made sessions: %d, then %d (%v)", len(before.Sessions), len(after.Sessions), err)
	}
}
