package api_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

func (e *env) closeSession(t *testing.T, sid string) {
	t.Helper()
	got, err := e.c.CloseSession(bg, api.SessionCloseParams{SessionID: sid, Reason: "done"})
	if err != nil || got.SessionID != sid || got.Status != core.SessionStatusClosed {
		t.Fatalf("session/close %s = %+v, %v", sid, got, err)
	}
}

func (e *env) listed(t *testing.T) []string {
	t.Helper()
	list, err := e.c.ListSessions(bg, api.SessionListParams{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range list.Sessions {
		ids = append(ids, l.SessionID)
	}
	return ids
}

// A closed session admits no runs and still reads; it can then be deleted
// with its events, checkpoints and roots, but not its blobs.
func TestSessionCloseThenDelete(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{SessionID: "s", Instructions: "be brief"})
	e.run(t, sid, "hello")
	e.model.setHold(true)
	held := e.model.calls()
	run := e.start(t, sid, "busy")
	e.model.waitArrived(t, held) // held before the hold is lifted below
	e.rejected(t, sid, core.RejectActiveWork, func() error {
		_, err := e.c.CloseSession(bg, api.SessionCloseParams{SessionID: sid})
		return err
	})
	// Unheld first: a call the release lets start (a steered turn) must not
	// be held with nobody left to release it.
	e.model.setHold(false)
	e.model.releaseOne(t)
	e.waitStatus(t, sid, run.RunID, core.StatusCompleted)
	e.rejected(t, sid, api.KindSessionNotClosed, func() error {
		_, err := e.c.DeleteSession(bg, api.SessionDeleteParams{SessionID: sid})
		return err
	})

	e.closeSession(t, sid)
	if got := e.read(t, sid); got.Status != core.SessionStatusClosed {
		t.Fatalf("session/read after close: %+v", got)
	}
	e.rejected(t, sid, core.RejectSessionClosed, func() error {
		_, err := e.c.StartRun(bg, api.RunStartParams{SessionID: sid, Input: textInput("more")})
		return err
	})
	e.rejected(t, sid, core.RejectSessionClosed, func() error {
		_, err := e.c.CloseSession(bg, api.SessionCloseParams{SessionID: sid})
		return err
	})
	cx := e.context(t, sid)
	instructions := cx.Entries[0].Content
	if out, err := e.c.ReadRun(bg, sid, run.RunID); err != nil || out.Output == nil {
		t.Fatalf("runs/read after close: %+v, %v", out, err)
	}
	if err := e.log.PutCheckpoint(bg, sid, 2, instructions.Digest); err != nil {
		t.Fatal(err)
	}

	del, err := e.c.DeleteSession(bg, api.SessionDeleteParams{SessionID: sid})
	if err != nil || !slices.Equal(del.Deleted, []string{sid}) {
		t.Fatalf("session/delete = %+v, %v", del, err)
	}
	for name, call := range map[string]func() error{
		"read":        func() error { _, err := e.c.ReadSession(bg, sid); return err },
		"events/read": func() error { _, err := e.c.ReadEvents(bg, api.EventsReadParams{SessionID: sid}); return err },
		"runs/read":   func() error { _, err := e.c.ReadRun(bg, sid, run.RunID); return err },
		"delete": func() error {
			_, err := e.c.DeleteSession(bg, api.SessionDeleteParams{SessionID: sid})
			return err
		},
	} {
		if err := call(); !isKind(err, api.KindNotFound) {
			t.Fatalf("%s of a deleted session: %v, want not_found", name, err)
		}
	}
	if _, err := e.log.Roots(bg, sid); !errors.Is(err, store.ErrSessionNotFound) {
		t.Fatalf("roots of a deleted session: %v", err)
	}
	if _, _, err := e.log.LatestCheckpoint(bg, sid, 0); !errors.Is(err, store.ErrCheckpointNotFound) {
		t.Fatalf("checkpoint of a deleted session: %v", err)
	}
	if b, err := e.c.ReadBlob(bg, api.BlobReadParams{Ref: api.DigestRef(instructions.Digest)}); err != nil || len(b.Data) == 0 {
		t.Fatalf("blob of a deleted session: %+v, %v (blobs are the collector's to delete)", b, err)
	}
	if ids := e.listed(t); len(ids) != 0 {
		t.Fatalf("listed after delete: %v", ids)
	}
	// The id is free for a new session that knows nothing of the old one.
	e.create(t, api.CreateSessionParams{SessionID: sid})
	if got := e.read(t, sid); got.Head != 1 || got.Status != core.SessionStatusOpen {
		t.Fatalf("new session under a deleted id: %+v", got)
	}
}

func isKind(err error, kind string) bool {
	var rpcErr *api.Error
	return errors.As(err, &rpcErr) && rpcErr.Kind() == kind
}

// A session that history forks inherit from is deleted with them or not at
// all; a clone inherits nothing and does not hold its source.
func TestSessionDelete_Forks(t *testing.T) {
	e := newEnv(t)
	src := e.create(t, api.CreateSessionParams{SessionID: "src", Instructions: "be brief"})
	e.run(t, src, "one")
	e.closeSession(t, src)
	// By default a fork of a closed session leaves the close out.
	f := e.fork(t, api.SessionForkParams{SessionID: src, NewSessionID: "f"})
	if got := e.read(t, "f"); got.Status != core.SessionStatusOpen || got.Head != e.read(t, src).Head-1 || f.AtSeq != got.Head {
		t.Fatalf("fork of a closed session: %+v at %d", got, f.AtSeq)
	}
	e.run(t, "f", "two")
	g := e.fork(t, api.SessionForkParams{SessionID: "f", NewSessionID: "g"})
	if _, err := e.c.CloneSession(bg, api.SessionCloneParams{SessionID: src, NewSessionID: "c"}); err != nil {
		t.Fatal(err)
	}

	err := e.rejected(t, src, api.KindSessionHasForks, func() error {
		_, err := e.c.DeleteSession(bg, api.SessionDeleteParams{SessionID: src})
		return err
	})
	if err.Message == "" {
		t.Fatal("no message")
	}
	e.rejected(t, src, api.KindSessionNotClosed, func() error {
		_, err := e.c.DeleteSession(bg, api.SessionDeleteParams{SessionID: src, Cascade: true})
		return err
	})
	e.closeSession(t, "f")
	e.rejected(t, "f", api.KindSessionHasForks, func() error {
		_, err := e.c.DeleteSession(bg, api.SessionDeleteParams{SessionID: "f"})
		return err
	})
	e.rejected(t, src, api.KindSessionNotClosed, func() error {
		_, err := e.c.DeleteSession(bg, api.SessionDeleteParams{SessionID: src, Cascade: true})
		return err
	})
	e.closeSession(t, g.SessionID)
	del, err2 := e.c.DeleteSession(bg, api.SessionDeleteParams{SessionID: src, Cascade: true})
	if err2 != nil || !slices.Equal(del.Deleted, []string{src, "f", "g"}) {
		t.Fatalf("cascade = %+v, %v", del, err2)
	}
	if ids := e.listed(t); !slices.Equal(ids, []string{"c"}) {
		t.Fatalf("left after the cascade: %v", ids)
	}
	if got := e.read(t, "c"); got.Source == nil || got.Source.SessionID != src {
		t.Fatalf("the clone after its source went: %+v", got)
	}
}

// session/list pages newest first with a cursor; after still lists by id.
func TestSessionList_PagesNewestFirst(t *testing.T) {
	e := newEnv(t)
	var created []string
	for i := range 7 {
		created = append(created, e.create(t, api.CreateSessionParams{SessionID: fmt.Sprintf("s%d", i)}))
	}
	f := e.fork(t, api.SessionForkParams{SessionID: "s0", NewSessionID: "fork"})
	created = append(created, f.SessionID)

	var got []core.Lifecycle
	p := api.SessionListParams{Limit: 3}
	pages := 0
	for {
		page, err := e.c.ListSessions(bg, p)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		got = append(got, page.Sessions...)
		if page.Cursor == "" {
			break
		}
		if len(page.Sessions) != 3 {
			t.Fatalf("a page with a cursor has %d sessions", len(page.Sessions))
		}
		p.Before = page.Cursor
	}
	var ids []string
	for _, l := range got {
		ids = append(ids, l.SessionID)
	}
	if pages != 3 || len(ids) != len(created) || !slices.IsSortedFunc(got, store.NewestFirst) {
		t.Fatalf("%d pages: %v", pages, ids)
	}
	// A fork is as new as its creation, not its source's.
	at := func(id string) int64 { return got[slices.Index(ids, id)].CreatedAtMs }
	if at("fork") < at("s6") || at("s6") < at("s0") {
		t.Fatalf("created at: fork %d, s6 %d, s0 %d", at("fork"), at("s6"), at("s0"))
	}
	slices.Sort(ids)
	slices.Sort(created)
	if !slices.Equal(ids, created) {
		t.Fatalf("listed %v, created %v", ids, created)
	}
	// Without a limit: everything, no cursor.
	all, err := e.c.ListSessions(bg, api.SessionListParams{})
	if err != nil || len(all.Sessions) != len(created) || all.Cursor != "" {
		t.Fatalf("all sessions: %d, cursor %q, %v", len(all.Sessions), all.Cursor, err)
	}
	if byID, err := e.c.ListSessions(bg, api.SessionListParams{After: "s4", Limit: 2}); err != nil ||
		len(byID.Sessions) != 2 || byID.Sessions[0].SessionID != "s5" || byID.Sessions[1].SessionID != "s6" {
		t.Fatalf("after s4: %+v, %v", byID, err)
	}
	for _, bad := range []api.SessionListParams{{Before: "nonsense"}, {Before: "1:x", After: "s1"}} {
		if _, err := e.c.ListSessions(bg, bad); !isKind(err, api.KindInvalidParams) {
			t.Fatalf("list %+v: %v, want invalid_params", bad, err)
		}
	}
}

// A reader long-polling a session that is deleted wakes at once and is told
// the session is gone, rather than waiting out its wait.
func TestSessionDelete_WakesLongPollingReaders(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{SessionID: "s"})
	e.closeSession(t, sid)
	head := e.read(t, sid).Head
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := e.c.ReadEvents(bg, api.EventsReadParams{SessionID: sid, After: head, WaitMs: 20_000})
		done <- err
	}()
	// Let the reader start waiting: it is waiting once the session is loaded
	// and its head is past; a read of the session is loaded by then too.
	time.Sleep(200 * time.Millisecond)
	if _, err := e.c.DeleteSession(bg, api.SessionDeleteParams{SessionID: sid}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		wantKind(t, err, api.KindNotFound)
		if waited := time.Since(start); waited > 10*time.Second {
			t.Fatalf("the reader waited %v", waited)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a long-polling reader of a deleted session was not woken")
	}
}
