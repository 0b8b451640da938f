package api_test

import (
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

func TestContext_ReadAtSeqAndDiff(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{Model: testModel(), Instructions: "be brief"})
	afterOpen := e.read(t, sid).Head
	r := e.start(t, sid, "hello")
	e.waitStatus(t, sid, r.RunID, core.StatusCompleted)
	head := e.read(t, sid).Head

	then, err := e.c.ReadContextAt(bg, sid, afterOpen)
	if err != nil {
		t.Fatal(err)
	}
	if len(then.Entries) != 1 || then.Entries[0].Kind != core.EntryInstructions {
		t.Fatalf("context after the open: %+v", then.Entries)
	}
	now := e.context(t, sid)
	if at, err := e.c.ReadContextAt(bg, sid, head); err != nil || len(at.Entries) != len(now.Entries) || at.Revision != now.Revision {
		t.Fatalf("context at the head %+v (%v), now %+v", at, err, now)
	}
	d, err := e.c.DiffContext(bg, api.ContextDiffParams{SessionID: sid, FromSeq: afterOpen, ToSeq: head})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Added) != 2 || d.Added[0].Entry.Role != core.RoleUser || d.Added[1].Entry.Role != core.RoleAssistant || len(d.Removed) != 0 {
		t.Fatalf("diff %+v", d)
	}
	for _, bad := range []api.ContextDiffParams{{SessionID: sid, FromSeq: 5, ToSeq: 2}, {SessionID: sid, FromSeq: 0, ToSeq: head + 10}} {
		_, err := e.c.DiffContext(bg, bad)
		wantKind(t, err, api.KindInvalidParams)
	}
	_, err = e.c.ReadContextAt(bg, sid, head+1)
	wantKind(t, err, api.KindInvalidParams)
}
