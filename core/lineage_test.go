package core_test

import (
	"reflect"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

// A sub-agent's session records its parent when it opens; the state, its
// checkpoint, its summary and the catalog's lifecycle all carry it.
func TestLineage_ParentIsRecorded(t *testing.T) {
	parent := &core.ParentRef{SessionID: "p", RunID: "r1", CallID: "call_1", Depth: 1}
	st := core.NewState()
	adm, err := core.Admit(st, core.OpenSession{AtMs: 1, SessionID: "child", Config: testConfig(), Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	var life core.Lifecycle
	for i, p := range adm.Proposals {
		ev := core.Event{Seq: int64(i + 1), ObservedAtMs: 1, Kind: p.Kind, Version: core.EventVersion, Joins: p.Joins, Payload: p.Payload}
		if err := st.Apply(ev); err != nil {
			t.Fatal(err)
		}
		life = core.ProjectLifecycle(life, ev)
	}
	if !reflect.DeepEqual(st.Parent, parent) || !reflect.DeepEqual(life.Parent, parent) || !reflect.DeepEqual(st.Summary().Parent, parent) {
		t.Fatalf("parent: state %+v, lifecycle %+v", st.Parent, life.Parent)
	}
	data, err := core.EncodeCheckpoint(st)
	if err != nil {
		t.Fatal(err)
	}
	back, err := core.DecodeCheckpoint(data)
	if err != nil || !reflect.DeepEqual(back.Parent, parent) {
		t.Fatalf("the checkpoint lost the parent: %+v, %v", back.Parent, err)
	}
	if _, err := core.Admit(core.NewState(), core.OpenSession{AtMs: 1, SessionID: "c2", Config: testConfig(), Parent: &core.ParentRef{SessionID: "p"}}); err == nil {
		t.Fatal("a parent without run, call and depth was accepted")
	}
}
