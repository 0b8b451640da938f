package core_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

func rev(n int64) *int64 { return &n }

func TestSpec_EveryContextEventBumpsRevisionByOneAndCarriesItsBase(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m1"), entryText(core.EntryMessage, "note", "m2")}})
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryInstructions, "instructions.extra", "i2")}})
	h.mustAdmit(core.RemoveContext{AtMs: h.tick(), Keys: []string{"note"}, EntryIDs: []string{"e2"}})
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.callTools(call("c1", "a"))
	w := h.expectTools()
	h.mustAdmit(toolResult(h.tick(), w, "c1", core.CallOK, "x"))
	h.answer("done")
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("q2")})
	h.expectGenerate()
	h.mustAdmit(core.CancelRun{AtMs: h.tick(), RunID: "r2"})

	var revision int64
	n := 0
	for i, ev := range h.events {
		var base int64
		switch ev.Kind {
		case core.KindContextEntriesApplied:
			base = payload[core.ContextEntriesApplied](t, ev).BaseRevision
		case core.KindContextEntriesRemoved:
			base = payload[core.ContextEntriesRemoved](t, ev).BaseRevision
		case core.KindContextKeysRemoved:
			base = payload[core.ContextKeysRemoved](t, ev).BaseRevision
		default:
			continue
		}
		n++
		if base != revision {
			t.Fatalf("seq %d %s base revision %d, want %d", ev.Seq, ev.Kind, base, revision)
		}
		before, _ := core.Replay(h.events[:i])
		after, _ := core.Replay(h.events[:i+1])
		if before.Revision != revision || after.Revision != revision+1 {
			t.Fatalf("seq %d %s moved the revision %d -> %d", ev.Seq, ev.Kind, before.Revision, after.Revision)
		}
		revision++
	}
	if n < 8 || h.state().Revision != revision {
		t.Fatalf("%d context events, revision %d, state %d", n, revision, h.state().Revision)
	}
	// Events that are not context changes leave the revision alone.
	for i, ev := range h.events {
		switch ev.Kind {
		case core.KindContextEntriesApplied, core.KindContextEntriesRemoved, core.KindContextKeysRemoved:
			continue
		}
		before, _ := core.Replay(h.events[:i])
		after, _ := core.Replay(h.events[:i+1])
		if before != nil && after.Revision != before.Revision {
			t.Fatalf("seq %d %s changed the revision", ev.Seq, ev.Kind)
		}
	}
}

func TestSpec_StaleExpectedRevisionIsATypedConflict(t *testing.T) {
	h := newHarness(t, testConfig())
	cur := h.state().Revision
	if cur != 1 {
		t.Fatalf("revision after open with instructions %d", cur)
	}
	for _, cmd := range []core.Command{
		core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m")}, ExpectedRevision: rev(0)},
		core.RemoveContext{AtMs: h.tick(), Keys: []string{"instructions.main"}, ExpectedRevision: rev(7)},
	} {
		rej := h.rejection(cmd, core.RejectRevisionConflict)
		if rej.Expected == nil || rej.Actual == nil || *rej.Actual != cur {
			t.Fatalf("conflict %+v lacks expected/actual", rej)
		}
		var target *core.Rejection
		if !errors.As(error(rej), &target) || rej.Error() == "" {
			t.Fatal("rejection is not an error")
		}
	}
	rej := h.rejection(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m")}, ExpectedRevision: rev(0)}, core.RejectRevisionConflict)
	if *rej.Expected != 0 || *rej.Actual != 1 {
		t.Fatalf("expected %d actual %d", *rej.Expected, *rej.Actual)
	}
	// The matching revision is accepted.
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m")}, ExpectedRevision: rev(1)})
	h.mustAdmit(core.RemoveContext{AtMs: h.tick(), EntryIDs: []string{"e2"}, ExpectedRevision: rev(2)})
	if h.state().Revision != 3 {
		t.Fatalf("revision %d", h.state().Revision)
	}
}

func TestSpec_InstructionsNeedAKeyUnderInstructionsPrefix(t *testing.T) {
	h := newHarness(t, testConfig())
	for _, key := range []string{"", "instructions.", "instructions", "main", "Instructions.main", "x.instructions.main"} {
		h.rejection(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryInstructions, key, "x")}}, core.RejectInvalidInput)
	}
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryInstructions, "instructions.style", "x")}})
}

func TestSpec_OnlyMessagesInstructionsCatalogsAndSkillsCanBeAppended(t *testing.T) {
	h := newHarness(t, testConfig())
	// Catalogs and skill activations need a key in their namespace.
	for _, kind := range []string{core.EntryToolCall, core.EntryToolResult, core.EntryCatalog, core.EntrySkillActivation, core.EntryReasoning, core.EntrySummary, ""} {
		h.rejection(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(kind, "", "x")}}, core.RejectInvalidInput)
	}
	sys := entryText(core.EntryMessage, "", "x")
	sys.Role = "system"
	h.rejection(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{sys}}, core.RejectInvalidInput)
	noRef := entryText(core.EntryMessage, "", "x")
	noRef.Content.MediaType = ""
	h.rejection(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "ok"), noRef}}, core.RejectInvalidInput)
	h.rejection(core.AppendContext{AtMs: h.tick()}, core.RejectInvalidInput)

	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "defaults to user")}})
	e := h.state().Context()[1]
	if e.Role != core.RoleUser || e.Source != core.SourceAPI || e.ID != "e2" || e.RunID != "" {
		t.Fatalf("appended entry %+v", e)
	}
}

func TestSpec_InstructionsOrderedFirstByKeyOthersInRecordedOrder(t *testing.T) {
	h := newHarness(t, testConfig()) // instructions.main
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m1")}})
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryInstructions, "instructions.zeta", "iz")}})
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m2"), entryText(core.EntryInstructions, "instructions.alpha", "ia")}})
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m3")}})
	got := contextOf(h.state())
	want := []string{"instructions:ia", "instructions:be brief", "instructions:iz", "message/user:m1", "message/user:m2", "message/user:m3"}
	if !slices.Equal(got, want) {
		t.Fatalf("context\n got  %q\n want %q", got, want)
	}
	if h.state().EntryCount() != 6 {
		t.Fatalf("EntryCount %d", h.state().EntryCount())
	}
}

func TestSpec_KeyedEntriesReplaceTheirEarlierVersion(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "pin", "v1"), entryText(core.EntryMessage, "", "after")}})
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryInstructions, "instructions.main", "be verbose")}})
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "pin", "v2")}})
	got := contextOf(h.state())
	want := []string{"instructions:be verbose", "message/user:v2", "message/user:after"}
	if !slices.Equal(got, want) {
		t.Fatalf("context\n got  %q\n want %q", got, want)
	}
	main, ok := h.state().EntryByKey("instructions.main")
	if !ok || main.Preview != "be verbose" || main.ID != "e4" {
		t.Fatalf("instructions.main %+v", main)
	}
	if _, ok := h.state().EntryByID("e1"); ok {
		t.Fatal("the replaced entry is still active")
	}
	// Replacing never deletes history: the first version's event is still there.
	first := payload[core.ContextEntriesApplied](t, h.ofKind(core.KindContextEntriesApplied)[0])
	if first.Entries[0].ID != "e1" || first.Entries[0].Preview != "be brief" {
		t.Fatalf("first event %+v", first)
	}
}

func TestSpec_RemoveByKeyAndByIDIsTwoContextChanges(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m1"), entryText(core.EntryInstructions, "instructions.x", "ix"), entryText(core.EntryMessage, "", "m3")}})
	mark := len(h.events)
	h.mustAdmit(core.RemoveContext{AtMs: h.tick(), Keys: []string{"instructions.x"}, EntryIDs: []string{"e2"}})
	requireKinds(t, h.kindsSince(mark), core.KindContextKeysRemoved, core.KindContextEntriesRemoved)
	kr := payload[core.ContextKeysRemoved](t, h.events[mark])
	er := payload[core.ContextEntriesRemoved](t, h.events[mark+1])
	if kr.BaseRevision != 2 || er.BaseRevision != 3 || !slices.Equal(kr.Keys, []string{"instructions.x"}) || !slices.Equal(er.EntryIDs, []string{"e2"}) {
		t.Fatalf("keys %+v entries %+v", kr, er)
	}
	got := contextOf(h.state())
	if want := []string{"instructions:be brief", "message/user:m3"}; !slices.Equal(got, want) {
		t.Fatalf("context %q", got)
	}
	if h.state().Revision != 4 {
		t.Fatalf("revision %d", h.state().Revision)
	}
	// New entries keep counting: ids are never reused.
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m5")}})
	if last := h.state().Context()[2]; last.ID != "e5" {
		t.Fatalf("new entry id %s", last.ID)
	}

	h.rejection(core.RemoveContext{AtMs: h.tick()}, core.RejectInvalidInput)
	h.rejection(core.RemoveContext{AtMs: h.tick(), Keys: []string{"instructions.x"}}, core.RejectUnknownReference)
	h.rejection(core.RemoveContext{AtMs: h.tick(), EntryIDs: []string{"e2"}}, core.RejectUnknownReference)
	h.rejection(core.RemoveContext{AtMs: h.tick(), EntryIDs: []string{"e3", "e99"}}, core.RejectUnknownReference)
}

func TestSpec_ContextEditsRejectedWhileARunIsActiveOrQueued(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.expectGenerate()
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("q2")})
	for _, cmd := range []core.Command{
		core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m")}},
		core.RemoveContext{AtMs: h.tick(), Keys: []string{"instructions.main"}},
		core.CloseSession{AtMs: h.tick()},
	} {
		h.rejection(cmd, core.RejectActiveWork)
	}
	h.answer("a")
	// Only r2 (now active) left.
	h.rejection(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m")}}, core.RejectActiveWork)
	h.answer("b")
	h.expectIdle()
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m")}})
}

func TestSpec_RemovingHalfAToolCallPairIsRejected(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.callTools(call("c1", "a"))
	w := h.expectTools()
	h.mustAdmit(toolResult(h.tick(), w, "c1", core.CallOK, "x"))
	h.answer("a")
	h.expectIdle()
	var callID, resultID string
	for _, e := range h.state().Context() {
		switch e.Kind {
		case core.EntryToolCall:
			callID = e.ID
		case core.EntryToolResult:
			resultID = e.ID
		}
	}
	h.rejection(core.RemoveContext{AtMs: h.tick(), EntryIDs: []string{resultID}}, core.RejectInvalidInput)
	h.rejection(core.RemoveContext{AtMs: h.tick(), EntryIDs: []string{callID}}, core.RejectInvalidInput)
	h.mustAdmit(core.RemoveContext{AtMs: h.tick(), EntryIDs: []string{callID, resultID}})
	requireEveryToolCallAnswered(t, h.state())
	if hasPreview(h.state().Context(), "x") {
		t.Fatal("tool result still in context")
	}
}

func TestSpec_AKeyedEntryReplacesOnlyAnEntryOfItsOwnKind(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "note", "first")}})
	h.rejection(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "instructions.sneaky", "x")}}, core.RejectInvalidInput)
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryInstructions, "instructions.style", "terse")}})
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "note", "second")}})
	if e, ok := h.state().EntryByKey("note"); !ok || e.Content != text("second") || e.Kind != core.EntryMessage {
		t.Fatalf("keyed message not replaced: %+v", e)
	}
	if e, ok := h.state().EntryByKey("instructions.style"); !ok || e.Kind != core.EntryInstructions {
		t.Fatalf("instructions entry changed: %+v", e)
	}
}

// A context the state handed out stays what it was while the state moves
// on: Context shares the state's entries when they are in request order,
// so an edit in place, a removal and an append must leave it untouched.
func TestSpec_AHandedOutContextNeverChanges(t *testing.T) {
	h := newHarness(t, testConfig())
	note := entryText(core.EntryMessage, "note", "first")
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{note, entryText(core.EntryMessage, "", "a"), entryText(core.EntryMessage, "", "b")}})
	handed := h.state().Context()
	kept := slices.Clone(handed)
	edit := note
	edit.Content, edit.Preview = text("second"), "second"
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{edit}})
	h.mustAdmit(core.RemoveContext{AtMs: h.tick(), EntryIDs: []string{"e3"}})
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "c")}})
	if !reflect.DeepEqual(handed, kept) {
		t.Fatalf("the context handed out changed under its holder:\n got %+v\nwant %+v", handed, kept)
	}
	now := h.state().Context()
	if reflect.DeepEqual(now, kept) || len(now) != len(kept) {
		t.Fatalf("the state did not move on: %d entries then, %d now", len(kept), len(now))
	}
}

// The request order (instructions first, by key) holds whatever moved the
// entries: an instruction added after messages, one replaced under its
// key, removals, and a state restored from its checkpoint.
func TestSpec_RequestOrderSurvivesEveryChange(t *testing.T) {
	h := newHarness(t, testConfig())
	check := func(step string) {
		t.Helper()
		ctx := h.state().Context()
		seenOther := false
		for i, e := range ctx {
			if e.Kind != core.EntryInstructions {
				seenOther = true
				continue
			}
			if seenOther || (i > 0 && ctx[i-1].Kind == core.EntryInstructions && ctx[i-1].Key > e.Key) {
				t.Fatalf("%s: entry %d (%s) out of request order", step, i, e.Key)
			}
		}
		data, err := core.EncodeCheckpoint(h.state())
		if err != nil {
			t.Fatal(err)
		}
		restored, err := core.DecodeCheckpoint(data)
		if err != nil {
			t.Fatal(err)
		}
		if got := restored.Context(); !reflect.DeepEqual(got, ctx) {
			t.Fatalf("%s: the restored state's context differs:\n got %v\nwant %v", step, got, ctx)
		}
	}
	add := func(es ...core.EntryInput) {
		h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: es})
	}
	h.mustAdmit(core.RemoveContext{AtMs: h.tick(), Keys: []string{"instructions.main"}})
	add(entryText(core.EntryMessage, "", "hello"))
	check("a message, no instructions")
	add(entryText(core.EntryInstructions, "instructions.b", "b"))
	check("an instruction after it")
	add(entryText(core.EntryInstructions, "instructions.a", "a"))
	check("another instruction")
	add(entryText(core.EntryInstructions, "instructions.a", "a, again"))
	check("an instruction replaced under its key")
	h.mustAdmit(core.RemoveContext{AtMs: h.tick(), Keys: []string{"instructions.a"}})
	check("the replacement removed")
	add(entryText(core.EntryInstructions, "instructions.c", "c"))
	h.mustAdmit(core.RemoveContext{AtMs: h.tick(), Keys: []string{"instructions.b"}})
	check("the first instruction removed")
}

// An instruction added after the conversation joins the leading ones, so
// the context is still handed over without a copy (a turn must not pay
// for the session's length); so is a state restored from a checkpoint
// whose entries were stored with that instruction after the conversation,
// as older states held them.
func TestSpec_AnInstructionAddedLateKeepsTheContextUncopied(t *testing.T) {
	h := newHarness(t, testConfig()) // instructions.main
	for i := range 50 {
		h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m"+itoa(i))}})
	}
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryInstructions, "instructions.late", "added late")}})
	uncopied := func(what string, st *core.State) []core.Entry {
		t.Helper()
		ctx := st.Context()
		if ctx[0].Key != "instructions.late" || ctx[1].Key != "instructions.main" || ctx[2].Kind != core.EntryMessage {
			t.Fatalf("%s: context starts %s, %s, %s; want both instructions by key, then the messages", what, ctx[0].Key, ctx[1].Key, ctx[2].Kind)
		}
		if n := testing.AllocsPerRun(10, func() { _ = st.Context() }); n != 0 {
			t.Fatalf("%s: Context allocates %v times: it copies the context", what, n)
		}
		return ctx
	}
	want := uncopied("live", h.state())

	// The same state as an older binary stored it: the late instruction
	// after the messages.
	data, err := core.EncodeCheckpoint(h.state())
	if err != nil {
		t.Fatal(err)
	}
	var cp map[string]any
	if err := json.Unmarshal(data, &cp); err != nil {
		t.Fatal(err)
	}
	es := cp["entries"].([]any)
	cp["entries"] = append(slices.Clone(es[1:]), es[0]) // instructions.late, last
	old, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	restored, err := core.DecodeCheckpoint(old)
	if err != nil {
		t.Fatal(err)
	}
	if got := uncopied("restored", restored); !reflect.DeepEqual(got, want) {
		t.Fatalf("the restored context differs:\n got %v\nwant %v", got, want)
	}
}
