package api_test

import (
	"encoding/base64"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// session/runs/retry goes on from where a failed run stopped, with the
// skills that run activated back in context, and answers the same run when
// called again.
func TestRunsRetryGoesOnWithTheFailedRunsSkills(t *testing.T) {
	e := newSQLiteEnv(t)
	const skill = "---\nname: notes\ndescription: Read the notes.\n---\nRead notes.md.\n"
	var put api.BlobPutResult
	if err := e.c.Call(bg, api.MethodBlobsPut, map[string]any{"data": base64.StdEncoding.EncodeToString([]byte(skill)), "mediaType": "text/markdown"}, &put); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Call(bg, api.MethodWorkspacesCommit, map[string]any{"workspace": "skills", "files": []any{
		map[string]any{"path": ".cairn/skills/notes/SKILL.md", "ref": put.Ref, "size": len(skill)}}}, nil); err != nil {
		t.Fatal(err)
	}
	created, err := e.c.CreateSession(bg, api.CreateSessionParams{SessionID: "s", Model: core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "fake-1"},
		Links: []api.LinkParam{{Mount: "/work", Workspace: "skills"}}})
	if err != nil {
		t.Fatal(err)
	}
	e.model.mu.Lock()
	e.model.fail = 1
	e.model.mu.Unlock()
	run, err := e.c.StartRun(bg, api.RunStartParams{SessionID: created.SessionID, Input: []api.InputPart{{Type: "text", Text: "read them"}}, Skills: []string{"notes"}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, created.SessionID, run.RunID, core.StatusFailed)

	retry, err := e.c.RetryRun(bg, created.SessionID, run.RunID)
	if err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, created.SessionID, retry.RunID, core.StatusCompleted)
	req := e.model.request(e.model.calls() - 1)
	var skills, users int
	for _, en := range req.Entries {
		switch {
		case en.Kind == core.EntrySkillActivation:
			skills++
		case en.Role == core.RoleUser:
			users++
		}
	}
	if skills != 1 || users != 1 {
		t.Fatalf("the retry's request has %d skill activations and %d user messages, want 1 and 1", skills, users)
	}
	read, err := e.c.ReadRun(bg, created.SessionID, retry.RunID)
	if err != nil || read.RetryOf != run.RunID {
		t.Fatalf("runs/read of the retry: %+v, %v", read, err)
	}
	again, err := e.c.RetryRun(bg, created.SessionID, run.RunID)
	if err != nil || again.RunID != retry.RunID {
		t.Fatalf("a second retry: %+v, %v; want run %s", again, err, retry.RunID)
	}
	if _, err := e.c.RetryRun(bg, created.SessionID, retry.RunID); !isKind(err, core.RejectRunNotRetryable) {
		t.Fatalf("retrying a completed run: %v", err)
	}
}
