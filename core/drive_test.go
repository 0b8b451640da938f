package core_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

func TestDrive_NeverAppliesItsOwnProposals(t *testing.T) {
	d := core.NewDrive(core.NewState())
	a, err := d.Admit(core.OpenSession{AtMs: 5, SessionID: "s", Config: testConfig()})
	if err != nil {
		t.Fatal(err)
	}
	if d.State().Opened || d.State().Head != 0 {
		t.Fatal("admission changed the state before commit")
	}
	in := d.Next(6)
	if in.Kind != core.IntentAppend || in.ExpectedHead != 0 || !reflect.DeepEqual(in.Proposals, a.Proposals) {
		t.Fatalf("intent %+v", in)
	}
	// Asking again returns the same pending append.
	if again := d.Next(7); !reflect.DeepEqual(again, in) {
		t.Fatal("Next changed the pending append")
	}
	if in.Proposals[0].ObservedAtMs != 5 {
		t.Fatalf("observedAtMs %d, want the command's time", in.Proposals[0].ObservedAtMs)
	}
	if err := d.Committed([]core.Event{in.Proposals[0].Committed(1)}); err != nil {
		t.Fatal(err)
	}
	if !d.State().Opened || d.State().Head != 1 {
		t.Fatal("commit did not apply")
	}
}

func TestDrive_AdmitWhileProposalsPendingIsRefused(t *testing.T) {
	h := newHarness(t, testConfig())
	if _, err := h.d.Admit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")}); err != nil {
		t.Fatal(err)
	}
	before := h.snapshot()
	if _, err := h.d.Admit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("q")}); !errors.Is(err, core.ErrPendingAppend) {
		t.Fatalf("got %v, want ErrPendingAppend", err)
	}
	if !reflect.DeepEqual(before, h.state()) {
		t.Fatal("state changed")
	}
	// Abandoning the failed append lets the host admit again; nothing was applied.
	h.d.Abandon()
	if in := h.d.Next(h.tick()); in.Kind != core.IntentIdle {
		t.Fatalf("after abandon: %s", in.Kind)
	}
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("q")})
	if h.state().Run("r1") != nil || h.state().Active != "r2" {
		t.Fatal("abandoned run was applied")
	}
}

func TestDrive_PlannerProposalsAlsoBlockAdmission(t *testing.T) {
	h := newHarness(t, testConfig())
	if _, err := h.d.Admit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")}); err != nil {
		t.Fatal(err)
	}
	h.commit(h.d.Next(h.tick())) // run.accepted
	in := h.d.Next(h.tick())     // the planner opens turn 1
	if in.Kind != core.IntentAppend || in.Proposals[0].Kind != core.KindTurnStarted {
		t.Fatalf("intent %s", in.Kind)
	}
	if _, err := h.d.Admit(core.Steer{AtMs: h.tick(), SteeringID: "s", Input: input("x")}); !errors.Is(err, core.ErrPendingAppend) {
		t.Fatalf("got %v", err)
	}
	h.commit(in)
	h.mustAdmit(core.Steer{AtMs: h.tick(), SteeringID: "s", Input: input("x")})
}

func TestDrive_RepeatsWorkIntentUntilResultsAreCommitted(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	g1, g2 := h.expectGenerate(), h.expectGenerate()
	if !reflect.DeepEqual(g1, g2) {
		t.Fatal("generate intent changed between calls")
	}
	h.mustAdmit(generationWithCalls(h.tick(), g1, call("c1", "a")))
	w1, w2 := h.expectTools(), h.expectTools()
	if !reflect.DeepEqual(w1, w2) {
		t.Fatal("tool intent changed between calls")
	}
}

func TestDrive_CommittedRejectsEventsThatDoNotFollowTheHead(t *testing.T) {
	h := newHarness(t, testConfig())
	if _, err := h.d.Admit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")}); err != nil {
		t.Fatal(err)
	}
	in := h.d.Next(h.tick())
	err := h.d.Committed([]core.Event{in.Proposals[0].Committed(in.ExpectedHead + 2)})
	var corrupt *core.CorruptError
	if !errors.As(err, &corrupt) || corrupt.Seq != in.ExpectedHead+2 || corrupt.Error() == "" {
		t.Fatalf("got %v", err)
	}
	if again := h.d.Next(h.tick()); again.Kind != core.IntentAppend {
		t.Fatal("a failed commit dropped the pending proposals")
	}
}

func TestDrive_SameStateAndCommandGiveIdenticalProposals(t *testing.T) {
	build := func() []core.Proposal {
		h := newHarness(t, testConfig("a"))
		h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
		g := h.expectGenerate()
		a, err := core.Admit(h.state(), generationWithCalls(42, g, call("c1", "a"), call("c2", "zz")))
		if err != nil {
			t.Fatal(err)
		}
		return a.Proposals
	}
	a, b := build(), build()
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("%d vs %d proposals", len(a), len(b))
	}
	for i := range a {
		if a[i].Kind != b[i].Kind || !bytes.Equal(a[i].Payload, b[i].Payload) || !reflect.DeepEqual(a[i].Joins, b[i].Joins) {
			t.Fatalf("proposal %d differs:\n%s\n%s", i, a[i].Payload, b[i].Payload)
		}
	}
}

// A chained append carries the steps the core takes on its own after a
// command, and the events it applies are the ones appending each step in
// turn would commit. Until the host confirms the append, the drive admits
// and plans nothing.
func TestDrive_ChainIsTheStepsOneByOne(t *testing.T) {
	steps, chained := newHarness(t, testConfig()), newHarness(t, testConfig())
	cmd := core.StartRun{AtMs: 50, RunID: "r1", Input: input("q")}
	for _, h := range []*harness{steps, chained} {
		if _, err := h.d.Admit(cmd); err != nil {
			t.Fatal(err)
		}
	}
	var want []core.Event
	for {
		in := steps.d.Next(60)
		if in.Kind != core.IntentAppend {
			break
		}
		for i, p := range in.Proposals {
			want = append(want, p.Committed(in.ExpectedHead+int64(i)+1))
		}
		if err := steps.d.Committed(want[len(want)-len(in.Proposals):]); err != nil {
			t.Fatal(err)
		}
	}
	head := chained.state().Head
	in, got, err := chained.d.Chain(60, 16)
	if err != nil {
		t.Fatal(err)
	}
	if in.Kind != core.IntentAppend || in.ExpectedHead != head || len(in.Proposals) != len(got) || len(got) < 2 {
		t.Fatalf("chained intent %+v with %d events", in, len(got))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("chained events differ from the steps one by one:\n got %+v\nwant %+v", got, want)
	}
	if next := chained.d.Next(61); next.Kind != core.IntentIdle {
		t.Fatalf("a drive ahead of its log planned %s", next.Kind)
	}
	if _, err := chained.d.Admit(core.StartRun{AtMs: 62, RunID: "r2", Input: input("q")}); !errors.Is(err, core.ErrAhead) {
		t.Fatalf("admitting while ahead: %v", err)
	}
	chained.d.Appended()
	if a, b := chained.d.Next(63), steps.d.Next(63); a.Kind != core.IntentGenerate || !reflect.DeepEqual(a, b) {
		t.Fatalf("after the chained append %s, one by one %s", a.Kind, b.Kind)
	}
	if !reflect.DeepEqual(chained.state(), steps.state()) {
		t.Fatal("the chained state is not the state of the steps one by one")
	}
}
