package core_test

import (
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

// "An identical keyed edit is a no-op": re-sending an append whose every
// entry is keyed and equal to the active entry under its key (kind, role,
// content, preview, origin, provenance, source) appends no event, moves no
// revision and answers with the existing entry's id, also with the stale
// expectedRevision the first send carried. Anything that differs is a new
// version, as before.
func TestSpec_AnIdenticalKeyedEditIsANoOp(t *testing.T) {
	h := newHarness(t, testConfig())
	note := entryText(core.EntryMessage, "note", "hello")
	note.Origin = "api"
	first := h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{note}, ExpectedRevision: rev(1)})
	if first.Revision != 2 || !slices.Equal(first.EntryIDs, []string{"e2"}) {
		t.Fatalf("first send: revision %d, ids %v", first.Revision, first.EntryIDs)
	}
	same := func(name string, cmd core.AppendContext, ids ...string) {
		t.Helper()
		events, revision := len(h.events), h.state().Revision
		a := h.mustAdmit(cmd)
		if len(h.events) != events || h.state().Revision != revision {
			t.Fatalf("%s appended %d events, revision %d -> %d", name, len(h.events)-events, revision, h.state().Revision)
		}
		if a.Revision != revision || !slices.Equal(a.EntryIDs, ids) || !a.Duplicate || len(a.Proposals) != 0 {
			t.Fatalf("%s: revision %d, ids %v, duplicate %v; want revision %d, ids %v", name, a.Revision, a.EntryIDs, a.Duplicate, revision, ids)
		}
	}
	changed := func(name string, cmd core.AppendContext) {
		t.Helper()
		revision := h.state().Revision
		a := h.mustAdmit(cmd)
		if a.Revision != revision+1 || len(a.EntryIDs) != len(cmd.Entries) || a.Duplicate {
			t.Fatalf("%s: revision %d -> %d, ids %v; want a new version", name, revision, a.Revision, a.EntryIDs)
		}
	}
	same("a retry without expectedRevision", core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{note}}, "e2")
	same("a retry with the first send's expectedRevision", core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{note}, ExpectedRevision: rev(1)}, "e2")
	same("a retry with the current expectedRevision", core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{note}, ExpectedRevision: rev(2)}, "e2")
	main := entryText(core.EntryInstructions, "instructions.main", "be brief")
	same("the instructions the session opened with", core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{main}}, "e1")
	same("a batch of unchanged keyed entries", core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{main, note}}, "e1", "e2")

	// A changed edit with a stale revision still conflicts.
	other := note
	other.Content, other.Preview = text("hello again"), "hello again"
	h.rejection(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{other}, ExpectedRevision: rev(1)}, core.RejectRevisionConflict)

	variants := map[string]func(*core.EntryInput){
		"content":    func(e *core.EntryInput) { e.Content = text("bye") },
		"media type": func(e *core.EntryInput) { e.Content.MediaType = "text/markdown" },
		"preview":    func(e *core.EntryInput) { e.Preview = "hello!" },
		"origin":     func(e *core.EntryInput) { e.Origin = "cli" },
		"role":       func(e *core.EntryInput) { e.Role = core.RoleAssistant },
		"provenance": func(e *core.EntryInput) { p := text("source"); e.ProvenanceRef = &p },
	}
	for _, name := range []string{"content", "media type", "preview", "origin", "role", "provenance"} {
		base, _ := h.state().EntryByKey("note")
		cur := core.EntryInput{Key: "note", Kind: base.Kind, Role: base.Role, Content: base.Content, Preview: base.Preview, Origin: base.Origin, ProvenanceRef: base.ProvenanceRef}
		variants[name](&cur)
		changed("a different "+name, core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{cur}})
	}
	// An unkeyed message is always new; so is a batch with one changed entry.
	msg := entryText(core.EntryMessage, "", "again")
	changed("an unkeyed message", core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{msg}})
	changed("the same unkeyed message", core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{msg}})
	changed("a batch with one changed entry", core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{main, entryText(core.EntryInstructions, "instructions.extra", "x")}})

	// The no-op is decided as any edit is: refused while a run is active.
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.rejection(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{main}}, core.RejectActiveWork)
}

// A host replaying decisions made before the no-op existed asks for the old
// behaviour, and gets a new version of the entry.
func TestAppendUnchanged_AppendsAnIdenticalKeyedEdit(t *testing.T) {
	h := newHarness(t, testConfig())
	note := entryText(core.EntryMessage, "note", "hello")
	first := h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{note}})
	again := h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{note}, AppendUnchanged: true})
	if again.Duplicate || again.Revision != first.Revision+1 || slices.Equal(again.EntryIDs, first.EntryIDs) {
		t.Fatalf("first %+v, again %+v", first, again)
	}
}
