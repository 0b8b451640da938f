package api_test

import (
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

const skillDoc = "---\nname: release-notes\ndescription: Write release notes.\n---\nGroup entries by kind.\n"

// skillSession creates a workspace with one skill and a session linking it.
func (e *env) skillSession(t *testing.T) string {
	t.Helper()
	files := e.upload(t, map[string]string{".cairn/skills/release-notes/SKILL.md": skillDoc})
	if _, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "acorn", Files: files}); err != nil {
		t.Fatal(err)
	}
	return e.create(t, api.CreateSessionParams{Model: testModel(), Links: []api.LinkParam{{Mount: "/work", Workspace: "acorn"}}})
}

func skillEntries(cx api.ContextReadResult) []core.Entry {
	var out []core.Entry
	for _, en := range cx.Entries {
		if en.Kind == core.EntrySkillActivation {
			out = append(out, en)
		}
	}
	return out
}

func TestSkills_SessionActivationStaysUntilDeactivated(t *testing.T) {
	e := newEnv(t)
	sid := e.skillSession(t)
	res, err := e.c.ActivateSkill(bg, sid, "release-notes")
	if err != nil {
		t.Fatal(err)
	}
	if res.Key != "skill.release-notes" {
		t.Fatalf("activation %+v", res)
	}
	run := e.start(t, sid, "draft")
	e.waitStatus(t, sid, run.RunID, core.StatusCompleted)
	skills := skillEntries(e.context(t, sid))
	if len(skills) != 1 || skills[0].ProvenanceRef == nil || !strings.Contains(skills[0].Preview, "release-notes") {
		t.Fatalf("skill entries after a run %+v", skills)
	}
	body, err := e.c.Get(bg, skills[0].Content.Digest)
	if err != nil || !strings.Contains(string(body), "Group entries by kind.") {
		t.Fatalf("activation body %q %v", body, err)
	}
	// The model saw it.
	found := false
	for _, en := range e.model.request(0).Entries {
		found = found || en.Kind == core.EntrySkillActivation
	}
	if !found {
		t.Fatal("the request did not carry the activated skill")
	}
	if _, err := e.c.DeactivateSkill(bg, sid, "release-notes"); err != nil {
		t.Fatal(err)
	}
	if skills := skillEntries(e.context(t, sid)); len(skills) != 0 {
		t.Fatalf("deactivated skill still in context: %+v", skills)
	}
}

func TestSkills_RunActivationExpiresWithTheRun(t *testing.T) {
	e := newEnv(t)
	sid := e.skillSession(t)
	run, err := e.c.StartRun(bg, api.RunStartParams{SessionID: sid, Input: textInput("draft"), Skills: []string{"release-notes"}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, sid, run.RunID, core.StatusCompleted)
	var during []core.Entry
	for _, en := range e.model.request(0).Entries {
		if en.Kind == core.EntrySkillActivation {
			during = append(during, en)
		}
	}
	if len(during) != 1 || during[0].Scope != core.ScopeRun {
		t.Fatalf("skill entries in the run's request %+v", during)
	}
	if skills := skillEntries(e.context(t, sid)); len(skills) != 0 {
		t.Fatalf("run-scoped skill outlived its run: %+v", skills)
	}
}

func TestSkills_UnknownSkillIsATypedRejection(t *testing.T) {
	e := newEnv(t)
	sid := e.skillSession(t)
	rpcErr := e.rejected(t, sid, core.RejectUnknownReference, func() error { _, err := e.c.ActivateSkill(bg, sid, "nope"); return err })
	if !strings.Contains(rpcErr.Message, "release-notes") {
		t.Fatalf("the error should name the skills there are: %q", rpcErr.Message)
	}
	e.rejected(t, sid, core.RejectUnknownReference, func() error {
		_, err := e.c.StartRun(bg, api.RunStartParams{SessionID: sid, Input: textInput("x"), Skills: []string{"nope"}})
		return err
	})
	e.rejected(t, sid, api.KindInvalidParams, func() error { _, err := e.c.ActivateSkill(bg, sid, ""); return err })
}
