package core_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

func TestSpec_OpenSessionRecordsConfigAndMainInstructions(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	requireKinds(t, h.kinds(), core.KindSessionOpened, core.KindContextEntriesApplied)
	s := h.state()
	if !s.Opened || s.Closed || s.SessionID != "s1" || s.ConfigRevision != 1 || s.Revision != 1 || s.Head != 2 {
		t.Fatalf("state %+v", s)
	}
	e, ok := s.EntryByKey(core.InstructionKeyPrefix + "main")
	if !ok || e.Kind != core.EntryInstructions || e.Source != core.SourceAPI || e.ID != "e1" {
		t.Fatalf("instructions entry %+v", e)
	}
	if h.next().Kind != core.IntentIdle {
		t.Fatal("a fresh session is not idle")
	}

	// Without instructions, only the opened event.
	d := core.NewDrive(core.NewState())
	if d.Next(1).Kind != core.IntentIdle {
		t.Fatal("an unopened session is not idle")
	}
	a, err := d.Admit(core.OpenSession{AtMs: 1, SessionID: "s2", Config: testConfig()})
	if err != nil || len(a.Proposals) != 1 || a.Proposals[0].Kind != core.KindSessionOpened {
		t.Fatalf("%+v %v", a, err)
	}
}

func TestSpec_OpenSessionTwiceIsSessionExists(t *testing.T) {
	h := newHarness(t, testConfig())
	h.rejection(core.OpenSession{AtMs: h.tick(), SessionID: "s1", Config: testConfig()}, core.RejectSessionExists)
	h.rejection(core.OpenSession{AtMs: h.tick(), SessionID: "other", Config: testConfig()}, core.RejectSessionExists)
}

func TestSpec_CommandsBeforeOpenAreRejected(t *testing.T) {
	s := core.NewState()
	for _, cmd := range []core.Command{
		core.StartRun{RunID: "r1", Input: input("x")},
		core.AppendContext{Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m")}},
		core.CloseSession{},
		core.ChangeConfig{Config: testConfig()},
	} {
		if _, err := core.Admit(s, cmd); err == nil {
			t.Fatalf("%T admitted before open", cmd)
		} else if rej := err.(*core.Rejection); rej.Kind != core.RejectUnknownReference {
			t.Fatalf("%T: %s", cmd, rej.Kind)
		}
	}
	if _, err := core.Admit(s, core.OpenSession{Config: testConfig()}); err == nil || err.(*core.Rejection).Kind != core.RejectInvalidInput {
		t.Fatalf("open without id: %v", err)
	}
	in := entryText(core.EntryInstructions, "", "x")
	in.Content.MediaType = ""
	if _, err := core.Admit(s, core.OpenSession{SessionID: "s", Config: testConfig(), Instructions: &in}); err == nil || err.(*core.Rejection).Kind != core.RejectInvalidInput {
		t.Fatalf("open with bad instructions: %v", err)
	}
}

func invalidConfigs() map[string]core.SessionConfig {
	with := func(f func(c *core.SessionConfig)) core.SessionConfig { c := testConfig("a"); f(&c); return c }
	return map[string]core.SessionConfig{
		"no provider":       with(func(c *core.SessionConfig) { c.Model.ProviderID = "" }),
		"no model":          with(func(c *core.SessionConfig) { c.Model.Model = "" }),
		"no api kind":       with(func(c *core.SessionConfig) { c.Model.APIKind = "" }),
		"unknown api kind":  with(func(c *core.SessionConfig) { c.Model.APIKind = "completions" }),
		"negative maxTurns": with(func(c *core.SessionConfig) { c.MaxTurns = -1 }),
		"empty tool name":   with(func(c *core.SessionConfig) { c.Tools = []string{"a", ""} }),
		"tool twice":        with(func(c *core.SessionConfig) { c.Tools = []string{"a", "b", "a"} }),
	}
}

func TestSpec_InvalidConfigurationsAreRejected(t *testing.T) {
	for name, cfg := range invalidConfigs() {
		t.Run(name, func(t *testing.T) {
			if err := core.ValidateConfig(cfg); err == nil || err.(*core.Rejection).Kind != core.RejectInvalidConfiguration {
				t.Fatalf("ValidateConfig: %v", err)
			}
			if _, err := core.Admit(core.NewState(), core.OpenSession{SessionID: "s", Config: cfg}); err == nil || err.(*core.Rejection).Kind != core.RejectInvalidConfiguration {
				t.Fatalf("open: %v", err)
			}
			h := newHarness(t, testConfig("a"))
			h.rejection(core.ChangeConfig{AtMs: h.tick(), Config: cfg}, core.RejectInvalidConfiguration)
		})
	}
	for _, kind := range []string{core.APIChatCompletions, core.APIOpenAIResponses, core.APIAnthropicMessages} {
		cfg := testConfig()
		cfg.Model.APIKind = kind
		if err := core.ValidateConfig(cfg); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
	}
}

func TestSpec_ChangeConfigCannotChangeTheAPIKind(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	other := testConfig("a")
	other.Model.APIKind = core.APIAnthropicMessages
	h.rejection(core.ChangeConfig{AtMs: h.tick(), Config: other}, core.RejectInvalidConfiguration)

	next := testConfig("b", "a")
	next.Model.Model = "gpt-bigger"
	next.MaxTurns = 7
	h.mustAdmit(core.ChangeConfig{AtMs: h.tick(), Config: next})
	s := h.state()
	if s.ConfigRevision != 2 || s.Config.Model.Model != "gpt-bigger" || !equalStrings(s.Config.Tools, []string{"b", "a"}) || s.MaxTurns() != 7 {
		t.Fatalf("config %+v rev %d", s.Config, s.ConfigRevision)
	}
	if got := payload[core.SessionConfigChanged](t, h.events[len(h.events)-1]); got.Config.Model.Model != "gpt-bigger" {
		t.Fatalf("payload %+v", got)
	}
	// The next turn is planned with the new config.
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	g := h.expectGenerate()
	if g.Config.Model.Model != "gpt-bigger" || payload[core.TurnPlanned](t, h.ofKind(core.KindTurnPlanned)[0]).ConfigRevision != 2 {
		t.Fatal("turn not planned with the changed config")
	}
}

func TestSpec_CloseSessionRequiresNoWorkAndEndsTheSession(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.rejection(core.CloseSession{AtMs: h.tick()}, core.RejectActiveWork)
	h.answer("a")
	h.mustAdmit(core.CloseSession{AtMs: h.tick(), Reason: "done"})
	last := h.events[len(h.events)-1]
	if last.Kind != core.KindSessionClosed || payload[core.SessionClosed](t, last).Reason != "done" {
		t.Fatalf("last event %s", last.Kind)
	}
	if in := h.next(); in.Kind != core.IntentClosed {
		t.Fatalf("intent %s, want closed", in.Kind)
	}
	for _, cmd := range []core.Command{
		core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("q")},
		core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "", "m")}},
		core.RemoveContext{AtMs: h.tick(), Keys: []string{"instructions.main"}},
		core.ChangeConfig{AtMs: h.tick(), Config: testConfig()},
		core.CloseSession{AtMs: h.tick()},
	} {
		h.rejection(cmd, core.RejectSessionClosed)
	}
	h.rejection(core.OpenSession{AtMs: h.tick(), SessionID: "s1", Config: testConfig()}, core.RejectSessionExists)
}

func TestIntentKind_String(t *testing.T) {
	for k, want := range map[core.IntentKind]string{core.IntentIdle: "idle", core.IntentAppend: "append", core.IntentGenerate: "generate", core.IntentInvokeTools: "invoke_tools", core.IntentClosed: "closed"} {
		if k.String() != want {
			t.Fatalf("%d: %s", k, k.String())
		}
	}
}

func TestSpec_ProviderParamsAreCanonicalAndPartOfTheFingerprint(t *testing.T) {
	cfg := testConfig()
	cfg.ProviderParams = []byte(`{ "temperature": 0.2, "extra": {"b":1,"a":2} }`)
	h := newHarness(t, cfg)
	if got := string(h.state().Config.ProviderParams); got != `{"extra":{"a":2,"b":1},"temperature":0.2}` {
		t.Fatalf("stored params %s", got)
	}
	plain := core.PlanFingerprint(testConfig(), h.state().Context())
	if core.PlanFingerprint(h.state().Config, h.state().Context()) == plain {
		t.Fatal("provider params do not change the fingerprint")
	}
	bad := testConfig()
	bad.ProviderParams = []byte(`[1]`)
	if err := core.ValidateConfig(bad); err == nil {
		t.Fatal("a non-object params value was accepted")
	}
}

func TestSpec_LinksMountWorkspacesAndSnapshotsAtPathsThatDoNotOverlap(t *testing.T) {
	snap := "sha256:" + strings.Repeat("ab", 32)
	good := testConfig()
	good.Links = []core.Link{{Mount: "/work", Workspace: "acorn"}, {Mount: "/ref/v1", Snapshot: snap}, {Mount: "/ref2", Workspace: "docs"}}
	if err := core.ValidateConfig(good); err != nil {
		t.Fatalf("valid links rejected: %v", err)
	}
	bad := map[string][]core.Link{
		"relative mount":     {{Mount: "work", Workspace: "a"}},
		"trailing slash":     {{Mount: "/work/", Workspace: "a"}},
		"dot-dot":            {{Mount: "/work/../etc", Workspace: "a"}},
		"no target":          {{Mount: "/work"}},
		"two targets":        {{Mount: "/work", Workspace: "a", Snapshot: snap}},
		"snapshot not a ref": {{Mount: "/work", Snapshot: "v1"}},
		"same mount":         {{Mount: "/work", Workspace: "a"}, {Mount: "/work", Workspace: "b"}},
		"nested mount":       {{Mount: "/work", Workspace: "a"}, {Mount: "/work/sub", Snapshot: snap}},
		"root overlaps all":  {{Mount: "/", Workspace: "a"}, {Mount: "/x", Workspace: "b"}},
	}
	for name, links := range bad {
		cfg := testConfig()
		cfg.Links = links
		var rej *core.Rejection
		if err := core.ValidateConfig(cfg); !errors.As(err, &rej) || rej.Kind != core.RejectInvalidConfiguration {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A prefix that is not a parent directory does not overlap.
	ok := testConfig()
	ok.Links = []core.Link{{Mount: "/work", Workspace: "a"}, {Mount: "/workshop", Workspace: "b"}}
	if err := core.ValidateConfig(ok); err != nil {
		t.Fatalf("/work and /workshop do not overlap: %v", err)
	}
}
