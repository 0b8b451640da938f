package core_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

func TestSpec_TurnPlannedStoresTheFingerprintOfTheContextTheRequestIsBuiltFrom(t *testing.T) {
	h := newHarness(t, testConfig("a", "b"))
	h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryInstructions, "instructions.b", "x"), entryText(core.EntryMessage, "", "earlier")}})
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	for turn := 1; turn <= 3; turn++ {
		g := h.expectGenerate()
		planned := payload[core.TurnPlanned](t, h.ofKind(core.KindTurnPlanned)[turn-1])
		s := h.state()
		if planned.Turn != turn || planned.RunID != "r1" {
			t.Fatalf("planned %+v", planned)
		}
		if planned.ContextRevision != s.Revision || planned.ConfigRevision != s.ConfigRevision {
			t.Fatalf("planned revisions %d/%d, state %d/%d", planned.ContextRevision, planned.ConfigRevision, s.Revision, s.ConfigRevision)
		}
		if fp := core.PlanFingerprint(s.Config, s.Context()); fp != planned.Fingerprint {
			t.Fatalf("turn %d: fingerprint of committed context %s != planned %s", turn, fp, planned.Fingerprint)
		}
		// The work handed to the adapter rebuilds to the same fingerprint.
		if g.Fingerprint != planned.Fingerprint || core.PlanFingerprint(g.Config, g.Entries) != planned.Fingerprint || g.ContextRevision != planned.ContextRevision {
			t.Fatalf("turn %d: generate work does not match its plan", turn)
		}
		if turn < 3 {
			h.mustAdmit(generationWithCalls(h.tick(), g, call("c"+itoa(turn), "a")))
			w := h.expectTools()
			h.mustAdmit(toolResult(h.tick(), w, w.Calls[0].CallID, core.CallOK, "r"))
		} else {
			h.answer("done")
		}
	}
}

func TestSpec_FingerprintsNeverLookLikeBlobRefs(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.answer("a")
	for _, ev := range h.ofKind(core.KindTurnPlanned) {
		fp := payload[core.TurnPlanned](t, ev).Fingerprint
		if content.IsDigestString(fp) || !strings.HasPrefix(fp, core.FingerprintPrefix) {
			t.Fatalf("plan fingerprint %q", fp)
		}
		// Nor does the stores' ref scan pick one up.
		refs, err := content.ExtractRefs(ev.Payload)
		if err != nil || len(refs) != 0 {
			t.Fatalf("refs in turn.planned: %v %v", refs, err)
		}
	}
	for _, ev := range h.ofKind(core.KindRunAccepted) {
		fp := payload[core.RunAccepted](t, ev).InputFingerprint
		if content.IsDigestString(fp) || fp == "" {
			t.Fatalf("input fingerprint %q", fp)
		}
	}
	if fp := core.PlanFingerprint(core.SessionConfig{}, nil); content.IsDigestString(fp) {
		t.Fatal("empty plan fingerprint looks like a ref")
	}
}

func TestSpec_PlanFingerprintChangesWithEveryRequestInput(t *testing.T) {
	cfg := testConfig("a", "b")
	entries := []core.Entry{
		{ID: "e1", Kind: core.EntryInstructions, Content: text("i")},
		{ID: "e2", Kind: core.EntryMessage, Role: core.RoleUser, Content: text("m")},
		{ID: "e3", Kind: core.EntryToolCall, CallID: "c1", ToolName: "a", Content: text("args")},
	}
	base := core.PlanFingerprint(cfg, entries)
	if base != core.PlanFingerprint(cfg, append([]core.Entry(nil), entries...)) {
		t.Fatal("fingerprint is not a function of its inputs")
	}
	// Display-only fields do not change the request.
	display := append([]core.Entry(nil), entries...)
	display[1].Preview, display[1].Origin, display[1].TokenEstimate = "changed", "user:", core.TokenEstimate{Tokens: 9}
	if core.PlanFingerprint(cfg, display) != base {
		t.Fatal("display-only fields changed the fingerprint")
	}
	variants := map[string]func(c *core.SessionConfig, e []core.Entry) []core.Entry{
		"model":    func(c *core.SessionConfig, e []core.Entry) []core.Entry { c.Model.Model = "other"; return e },
		"provider": func(c *core.SessionConfig, e []core.Entry) []core.Entry { c.Model.ProviderID = "other"; return e },
		"api kind": func(c *core.SessionConfig, e []core.Entry) []core.Entry {
			c.Model.APIKind = core.APIOpenAIResponses
			return e
		},
		"tool order":    func(c *core.SessionConfig, e []core.Entry) []core.Entry { c.Tools = []string{"b", "a"}; return e },
		"tool removed":  func(c *core.SessionConfig, e []core.Entry) []core.Entry { c.Tools = []string{"a"}; return e },
		"entry order":   func(c *core.SessionConfig, e []core.Entry) []core.Entry { e[1], e[2] = e[2], e[1]; return e },
		"entry dropped": func(c *core.SessionConfig, e []core.Entry) []core.Entry { return e[:2] },
		"entry id":      func(c *core.SessionConfig, e []core.Entry) []core.Entry { e[1].ID = "e9"; return e },
		"role":          func(c *core.SessionConfig, e []core.Entry) []core.Entry { e[1].Role = core.RoleAssistant; return e },
		"content":       func(c *core.SessionConfig, e []core.Entry) []core.Entry { e[1].Content = text("other"); return e },
		"media type": func(c *core.SessionConfig, e []core.Entry) []core.Entry {
			e[1].Content.MediaType = content.MediaJSON
			return e
		},
		"provider kind":  func(c *core.SessionConfig, e []core.Entry) []core.Entry { e[1].Content.ProviderKind = "x"; return e },
		"call id":        func(c *core.SessionConfig, e []core.Entry) []core.Entry { e[2].CallID = "c2"; return e },
		"tool name":      func(c *core.SessionConfig, e []core.Entry) []core.Entry { e[2].ToolName = "b"; return e },
		"kind":           func(c *core.SessionConfig, e []core.Entry) []core.Entry { e[1].Kind = core.EntrySummary; return e },
		"field boundary": func(c *core.SessionConfig, e []core.Entry) []core.Entry { c.Tools = []string{"ab"}; return e },
	}
	seen := map[string]string{base: "base"}
	for name, mutate := range variants {
		c := cfg
		c.Tools = append([]string(nil), cfg.Tools...)
		e := mutate(&c, append([]core.Entry(nil), entries...))
		fp := core.PlanFingerprint(c, e)
		if prev, dup := seen[fp]; dup {
			t.Errorf("%s gives the same fingerprint as %s", name, prev)
		}
		seen[fp] = name
	}
}

func TestSpec_InputFingerprintIdentifiesThePayload(t *testing.T) {
	a := core.InputFingerprint(input("x", "y"))
	if a != core.InputFingerprint(input("x", "y")) {
		t.Fatal("not deterministic")
	}
	if a == core.InputFingerprint(input("y", "x")) || a == core.InputFingerprint(input("x")) || a == core.InputFingerprint(input("xy")) {
		t.Fatal("different inputs share a fingerprint")
	}
}

// A fingerprint through a memo equals the one computed whole, whatever
// the request does to the one before it, including keeping its ids with
// other content.
func TestSpec_FingerprintMemoEqualsTheWholeHash(t *testing.T) {
	cfg := testConfig("a", "b")
	msg := func(id, s string) core.Entry {
		return core.Entry{ID: id, Kind: core.EntryMessage, Role: core.RoleUser, Content: text(s)}
	}
	base := []core.Entry{msg("e1", "one"), msg("e2", "two"), msg("e3", "three")}
	// grown is one array that requests extend in place, as a State's
	// entries are: a memo knows its entries there by their first address.
	grown := append(make([]core.Entry, 0, 8), base...)
	other := cfg
	other.Tools = []string{"a"}
	requests := []struct {
		name    string
		cfg     core.SessionConfig
		entries []core.Entry
	}{
		{"first", cfg, base},
		{"extended", cfg, append(slices.Clone(base), msg("e4", "four"))},
		{"the same", cfg, append(slices.Clone(base), msg("e4", "four"))},
		{"shorter", cfg, base[:2]},
		{"a middle entry removed", cfg, []core.Entry{base[0], base[2]}},
		{"an instruction first", cfg, append([]core.Entry{{ID: "e9", Kind: core.EntryInstructions, Content: text("i")}}, base...)},
		{"another config", other, base},
		{"the same ids, other content", other, []core.Entry{msg("e1", "ONE"), base[1], base[2]}},
		{"empty", cfg, nil},
		{"in one array", cfg, grown},
		{"in one array, extended in place", cfg, append(grown, msg("e4", "four"))},
		{"in one array, extended again", cfg, append(grown, msg("e4", "four"), msg("e5", "five"))},
		{"in one array, shorter", cfg, grown[:2]},
		{"in one array, whole again", cfg, grown[:5]},
		{"the same entries in another array", cfg, slices.Clone(grown[:5])},
		{"in one array, after another config", other, grown[:5]},
	}
	var memo *core.FingerprintMemo
	for _, r := range requests {
		got, next := memo.Fingerprint(r.cfg, r.entries)
		if want := core.PlanFingerprint(r.cfg, r.entries); got != want {
			t.Fatalf("%s: through the memo %s, whole %s", r.name, got, want)
		}
		if ok, _ := core.FingerprintMatches(got, r.cfg, r.entries, memo); !ok {
			t.Fatalf("%s: the fingerprint does not match its own request", r.name)
		}
		memo = next
	}
}

// A memo extended two ways (the planner's and the executor's, or a retry)
// gives each continuation its own entries: extending one in place never
// changes what another holds.
func TestSpec_FingerprintMemoBranchesStayApart(t *testing.T) {
	cfg := testConfig("a")
	msg := func(id string) core.Entry {
		return core.Entry{ID: id, Kind: core.EntryMessage, Role: core.RoleUser, Content: text("text of " + id)}
	}
	var base []core.Entry
	for i := range 5 {
		base = append(base, msg(fmt.Sprintf("e%d", i)))
	}
	_, root := (*core.FingerprintMemo)(nil).Fingerprint(cfg, base)
	left := append(slices.Clone(base), msg("L1"), msg("L2"))
	right := append(slices.Clone(base), msg("R1"))
	_, l := root.Fingerprint(cfg, left)
	_, r := root.Fingerprint(cfg, right)
	cases := []struct {
		name    string
		memo    *core.FingerprintMemo
		entries []core.Entry
	}{
		// What left would remember had right's entry overwritten its own.
		{"left, crossed", l, append(slices.Clone(base), msg("R1"), msg("L2"), msg("L3"))},
		{"left", l, append(slices.Clone(left), msg("L3"))},
		{"right", r, append(slices.Clone(right), msg("R2"), msg("R3"))},
		{"root", root, append(slices.Clone(base), msg("X"))},
	}
	for _, c := range cases {
		got, _ := c.memo.Fingerprint(cfg, c.entries)
		if want := core.PlanFingerprint(cfg, c.entries); got != want {
			t.Errorf("%s: through the memo %s, whole %s", c.name, got, want)
		}
	}
}

// A turn planned before fingerprints had version 2 still matches its
// request: the version 1 value below was computed by the code that
// planned such turns.
func TestSpec_Version1FingerprintsStillMatch(t *testing.T) {
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"}, Tools: []string{"a", "b"}}
	entries := []core.Entry{
		{ID: "e1", Kind: core.EntryInstructions, Content: text("i")},
		{ID: "e2", Kind: core.EntryMessage, Role: core.RoleUser, Content: text("m")},
		{ID: "e3", Kind: core.EntryToolCall, CallID: "c1", ToolName: "a", Content: text("args")},
	}
	const v1 = "fp1:2f339f6fe04ea0dca5aa00be9e0ecfa1b271e956e7c68a43ae71ec1824329920"
	if ok, _ := core.FingerprintMatches(v1, cfg, entries, nil); !ok {
		t.Fatal("a version 1 fingerprint no longer matches its request")
	}
	if ok, _ := core.FingerprintMatches(v1, cfg, entries[:2], nil); ok {
		t.Fatal("a version 1 fingerprint matches another request")
	}
	if !strings.HasPrefix(core.PlanFingerprint(cfg, entries), core.FingerprintPrefix) || core.FingerprintPrefix == "fp1:" {
		t.Fatal("new fingerprints are not version 2")
	}
}
