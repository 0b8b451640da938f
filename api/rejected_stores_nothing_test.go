package api_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// A rejected call stores nothing: the text it carried is not left behind
// in content storage for the retention grace period.
func TestRejectedCallsStoreNothing(t *testing.T) {
	e := newEnv(t)
	id := e.create(t, api.CreateSessionParams{})
	text := func(label string) string { return label + strings.Repeat(" padding", 1000) }
	absent := func(what, s string) {
		t.Helper()
		if _, err := e.blobs.Get(bg, content.Sum([]byte(s))); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("%s: the rejected call's text was stored (%v)", what, err)
		}
	}
	stale := int64(99)
	wantKind(t, e.c.Call(bg, api.MethodContextAppend, api.ContextAppendParams{SessionID: id, Kind: core.EntryMessage, Text: text("stale edit"), ExpectedRevision: &stale}, nil), core.RejectRevisionConflict)
	absent("a context append at a stale revision", text("stale edit"))

	wantKind(t, e.c.Call(bg, api.MethodSessionCreate, api.CreateSessionParams{SessionID: id, Model: testModel(), Instructions: text("instructions")}, nil), core.RejectSessionExists)
	absent("session/create of an existing id", text("instructions"))

	wantKind(t, e.c.Call(bg, api.MethodRunsStart, api.RunStartParams{SessionID: "no-such-session", Input: textInput(text("to nobody"))}, nil), api.KindNotFound)
	absent("a run for a session that does not exist", text("to nobody"))

	if _, err := e.c.CloseSession(bg, api.SessionCloseParams{SessionID: id}); err != nil {
		t.Fatal(err)
	}
	wantKind(t, e.c.Call(bg, api.MethodRunsStart, api.RunStartParams{SessionID: id, Input: textInput(text("too late"))}, nil), core.RejectSessionClosed)
	absent("a run on a closed session", text("too late"))
	wantKind(t, e.c.Call(bg, api.MethodRunsSteer, api.SteerParams{SessionID: id, Input: textInput(text("steer nothing"))}, nil), core.RejectNoActiveRun)
	absent("steering with no run", text("steer nothing"))
}
