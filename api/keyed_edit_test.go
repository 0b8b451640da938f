package api_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// A client retrying session/context/append with the same key and content
// (and the expectedRevision its first try carried) gets the first try's
// answer back: the existing entry's id and the current revision, with no
// event appended. Changed content is a new version, and with the stale
// revision a revision_conflict.
func TestContextAppend_IdenticalKeyedRetryIsANoOp(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{Instructions: "be brief"})
	base := e.context(t, sid).Revision
	send := api.ContextAppendParams{SessionID: sid, Key: "plan", Kind: core.EntryMessage, Text: "step one", ExpectedRevision: &base}
	first, err := e.c.AppendContext(ctx, send)
	if err != nil {
		t.Fatal(err)
	}
	events := len(e.events(t, sid))
	for _, p := range []api.ContextAppendParams{send, {SessionID: sid, Key: "plan", Kind: core.EntryMessage, Text: "step one"}} {
		again, err := e.c.AppendContext(ctx, p)
		if err != nil || again != first {
			t.Fatalf("retry: %+v, %v; want the first answer %+v", again, err, first)
		}
	}
	if n := len(e.events(t, sid)); n != events {
		t.Fatalf("the retries appended %d events", n-events)
	}
	send.Text = "step two"
	_, err = e.c.AppendContext(ctx, send)
	var rpcErr *api.Error
	if !errors.As(err, &rpcErr) || rpcErr.Kind() != core.RejectRevisionConflict {
		t.Fatalf("changed content with the stale revision: %v, want revision_conflict", err)
	}
	send.ExpectedRevision = &first.Revision
	next, err := e.c.AppendContext(ctx, send)
	if err != nil || next.Revision != first.Revision+1 || next.EntryID == first.EntryID {
		t.Fatalf("changed content: %+v, %v; want a new entry at revision %d", next, err, first.Revision+1)
	}
}
