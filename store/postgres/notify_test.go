package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store/postgres"
)

// WaitAppend wakes at the session's next append, by any store on the
// database (another process's writes arrive the same way), and not at
// another session's; the listener runs only while someone waits.
func TestWaitAppendWakesAtTheSessionsNextAppend(t *testing.T) {
	db, _ := connect(t)
	s := openStore(t, db, "default", nil)
	writer := openStore(t, db, "default", nil)
	ctx := context.Background()
	if _, err := s.Append(ctx, "s1", 0, []core.Proposal{note("a")}); err != nil {
		t.Fatal(err)
	}
	if postgres.Listening(db) {
		t.Fatal("a listener runs before anyone waits")
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := s.WaitAppend(wctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Append(ctx, "other", 0, []core.Proposal{note("b")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("woken by another session's append")
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := writer.Append(ctx, "s1", 1, []core.Proposal{note("c")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("not woken by the session's append")
	}
}

// A waiter whose context ends (its client went away) leaves, and the
// listener with the last one.
func TestWaitAppendStopsWithItsContext(t *testing.T) {
	db, _ := connect(t)
	s := openStore(t, db, "default", nil)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := s.WaitAppend(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if !postgres.Listening(db) {
		t.Fatal("no listener while a reader waits")
	}
	cancel()
	for deadline := time.Now().Add(5 * time.Second); postgres.Listening(db); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the listener outlived its last waiter")
		}
	}
}
