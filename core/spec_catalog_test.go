package core_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

func catalog(key, text string) core.EntryInput { return entryText(core.EntryCatalog, key, text) }

func runtimeAppend(h *harness, entries ...core.EntryInput) {
	h.t.Helper()
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: entries, Source: core.SourceRuntime})
}

func TestSpec_ChangedCatalogIsAppendedAtTailSupersedingTheEarlierVersion(t *testing.T) {
	h := newHarness(t, testConfig())
	runtimeAppend(h, catalog("catalog.tools", "v1"))
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m1")}})
	before := h.state().Context()
	runtimeAppend(h, catalog("catalog.tools", "v2"))
	after := h.state().Context()

	// Every earlier entry is still there, in place and byte-identical.
	if !slices.Equal(after[:len(before)], before) {
		t.Fatalf("earlier entries changed:\n before %+v\n after  %+v", before, after[:len(before)])
	}
	if len(after) != len(before)+1 {
		t.Fatalf("context grew by %d entries, want 1", len(after)-len(before))
	}
	v1, v2 := before[1], after[len(after)-1]
	if v2.Supersedes != v1.ID || v1.Supersedes != "" || v2.Preview != "v2" {
		t.Fatalf("v1 %+v, v2 %+v", v1, v2)
	}
	if cur, _ := h.state().EntryByKey("catalog.tools"); cur.ID != v2.ID {
		t.Fatalf("current version of catalog.tools is %s, want %s", cur.ID, v2.ID)
	}
}

func TestSpec_CatalogKeepsAtMostFiveSupersededVersions(t *testing.T) {
	h := newHarness(t, testConfig())
	for i := 1; i <= 8; i++ {
		runtimeAppend(h, catalog("catalog.skills", fmt.Sprintf("v%d", i)))
	}
	var got []string
	for _, e := range h.state().Context() {
		if e.Key == "catalog.skills" {
			got = append(got, e.Preview)
		}
	}
	// The current version and five superseded ones; v1 and v2 are dropped.
	if want := []string{"v3", "v4", "v5", "v6", "v7", "v8"}; !slices.Equal(got, want) {
		t.Fatalf("catalog versions %q, want %q", got, want)
	}
	h.mustAdmit(core.RemoveContext{AtMs: h.tick(), Keys: []string{"catalog.skills"}})
	for _, e := range h.state().Context() {
		if e.Key == "catalog.skills" {
			t.Fatalf("removing the key left version %s", e.Preview)
		}
	}
}

func TestSpec_TwoVersionsOfACatalogInOneAppendChain(t *testing.T) {
	h := newHarness(t, testConfig())
	runtimeAppend(h, catalog("catalog.a", "v1"), catalog("catalog.a", "v2"))
	cx := h.state().Context()
	if len(cx) != 3 || cx[2].Supersedes != cx[1].ID {
		t.Fatalf("context %+v", cx)
	}
}

func TestSpec_InstructionsStillReplaceInPlace(t *testing.T) {
	h := newHarness(t, testConfig())
	runtimeAppend(h, entryText(core.EntryInstructions, core.DerivedInstructionKeyPrefix+"/work", "i1"))
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m1")}})
	runtimeAppend(h, entryText(core.EntryInstructions, core.DerivedInstructionKeyPrefix+"/work", "i2"))
	want := []string{"instructions:be brief", "instructions:i2", "message/user:m1"}
	if got := contextOf(h.state()); !slices.Equal(got, want) {
		t.Fatalf("context %q, want %q", got, want)
	}
}

func TestSpec_DerivedKeysAreWrittenOnlyByTheRuntime(t *testing.T) {
	h := newHarness(t, testConfig())
	for _, in := range []core.EntryInput{
		catalog(core.SkillCatalogKey, "x"),
		catalog(core.AgentMenuKey, "x"),
		entryText(core.EntryInstructions, core.DerivedInstructionKeyPrefix+"/work", "x"),
	} {
		h.rejection(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{in}}, core.RejectInvalidInput)
		h.rejection(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{in}, Source: "plugin"}, core.RejectInvalidInput)
	}
	for _, key := range []string{"catalog.x", "skill.x", "instructions.x"} {
		h.rejection(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, key, "m")}}, core.RejectInvalidInput)
	}
	runtimeAppend(h, catalog(core.SkillCatalogKey, "x"))
	if e, _ := h.state().EntryByKey(core.SkillCatalogKey); e.Source != core.SourceRuntime {
		t.Fatalf("runtime catalog has source %q", e.Source)
	}
}

func TestSpec_RefreshEditsChangeOnlyWhatChanged(t *testing.T) {
	h := newHarness(t, testConfig())
	instr := entryText(core.EntryInstructions, core.DerivedInstructionKeyPrefix+"/work", "i1")
	skills := catalog(core.SkillCatalogKey, "s1")
	agents := catalog(core.AgentMenuKey, "a1")
	for _, c := range core.RefreshEdits(h.state(), []core.EntryInput{instr, skills, agents}, h.tick()) {
		h.mustAdmit(c)
	}
	if got := len(h.state().Context()); got != 4 {
		t.Fatalf("%d entries after the first refresh, want 4", got)
	}
	// Nothing changed: no command, nothing written.
	if cmds := core.RefreshEdits(h.state(), []core.EntryInput{instr, skills, agents}, h.tick()); len(cmds) != 0 {
		t.Fatalf("unchanged refresh proposed %+v", cmds)
	}
	// The skill catalog changed, the agent menu is gone, instructions are the
	// same; an unmanaged key in the derived set is ignored.
	skills2 := catalog(core.SkillCatalogKey, "s2")
	stray := catalog("catalog.other", "o")
	cmds := core.RefreshEdits(h.state(), []core.EntryInput{instr, skills2, stray}, h.tick())
	if len(cmds) != 2 {
		t.Fatalf("commands %+v", cmds)
	}
	app, ok := cmds[0].(core.AppendContext)
	if !ok || len(app.Entries) != 1 || app.Entries[0].Content != skills2.Content || app.Source != core.SourceRuntime {
		t.Fatalf("append %+v", cmds[0])
	}
	if rm, ok := cmds[1].(core.RemoveContext); !ok || !slices.Equal(rm.Keys, []string{core.AgentMenuKey}) {
		t.Fatalf("remove %+v", cmds[1])
	}
	for _, c := range cmds {
		h.mustAdmit(c)
	}
	want := []string{"instructions:be brief", "instructions:i1", "catalog:s1", "catalog:s2"}
	if got := contextOf(h.state()); !slices.Equal(got, want) {
		t.Fatalf("context %q, want %q", got, want)
	}
}

func skill(text string) core.EntryInput {
	return entryText(core.EntrySkillActivation, "", text)
}

func TestSpec_RunScopedActivationsExpireWithTheRun(t *testing.T) {
	for _, end := range []string{"completed", "failed", "cancelled"} {
		t.Run(end, func(t *testing.T) {
			h := newHarness(t, testConfig())
			h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntrySkillActivation, "skill.keep", "session skill")}})
			h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q"), Activations: []core.EntryInput{skill("run skill")}})
			g := h.expectGenerate()
			want := []string{"instructions:be brief", "skill_activation:session skill", "skill_activation:run skill", "message/user:q"}
			if got := contextOf(h.state()); !slices.Equal(got, want) {
				t.Fatalf("context during the run %q, want %q", got, want)
			}
			if e := g.Entries[2]; e.Scope != core.ScopeRun || e.RunID != "r1" || e.Key != "" {
				t.Fatalf("run-scoped entry %+v", e)
			}
			switch end {
			case "completed":
				h.answer("done")
			case "failed":
				h.mustAdmit(core.GenerationResult{AtMs: h.tick(), RunID: g.RunID, Turn: g.Turn, Finish: "error", Failure: &core.Failure{Kind: "x", Message: "x"}})
			case "cancelled":
				h.mustAdmit(core.CancelRun{AtMs: h.tick(), RunID: "r1"})
			}
			h.expectIdle()
			for _, e := range h.state().Context() {
				if e.Preview == "run skill" {
					t.Fatalf("run-scoped activation survived a %s run", end)
				}
			}
			if _, ok := h.state().EntryByKey("skill.keep"); !ok {
				t.Fatal("session-scoped activation expired with the run")
			}
			// The expiry is an event of the log, so replay agrees.
			replayed, err := core.Replay(h.events)
			if err != nil || !slices.Equal(contextOf(replayed), contextOf(h.state())) {
				t.Fatalf("replay %v: %q", err, contextOf(replayed))
			}
		})
	}
}

func TestSpec_QueuedRunActivatesItsSkillsOnlyWhenItStarts(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q1")})
	h.expectGenerate()
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("q2"), Activations: []core.EntryInput{skill("r2 skill")}})
	for _, e := range h.state().Context() {
		if e.Preview == "r2 skill" {
			t.Fatal("a queued run's activation entered context before the run started")
		}
	}
	h.answer("a1")
	g := h.expectGenerate()
	if g.RunID != "r2" || g.Entries[len(g.Entries)-2].Preview != "r2 skill" {
		t.Fatalf("r2's first turn context %q", contextOf(h.state()))
	}
}

func TestSpec_RunActivationsMustBeSkillActivations(t *testing.T) {
	h := newHarness(t, testConfig())
	h.rejection(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q"), Activations: []core.EntryInput{entryText(core.EntryMessage, "", "x")}}, core.RejectInvalidInput)
	scoped := entryText(core.EntryMessage, "", "x")
	scoped.Scope = core.ScopeRun
	h.rejection(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{scoped}}, core.RejectInvalidInput)
}
