package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/store/postgres"
)

// A delta published by one store reaches the listeners of its universe,
// in order, and no other universe's; nothing of it is stored, and a
// message over the bound is refused before it is sent.
func TestDeltasReachTheirUniversesListeners(t *testing.T) {
	db, _ := connect(t)
	pub := openStore(t, db, "default", nil)
	sub := openStore(t, db, "default", nil)
	other := openStore(t, db, "elsewhere", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	got := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- sub.ListenDeltas(ctx, func() { close(ready) }, func(session string, msg []byte) { got <- session + ":" + string(msg) })
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	for _, step := range []struct {
		s   *postgres.Store
		msg string
	}{{pub, "one"}, {other, "theirs"}, {pub, "two\nlines"}} {
		if err := step.s.PublishDelta(ctx, "s1", []byte(step.msg)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"s1:one", "s1:two\nlines"} {
		select {
		case g := <-got:
			if g != want {
				t.Fatalf("got %q, want %q", g, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%q never arrived", want)
		}
	}
	if err := pub.PublishDelta(ctx, "s1", []byte(strings.Repeat("x", postgres.MaxDeltaBytes+1))); !errors.Is(err, postgres.ErrDeltaTooLarge) {
		t.Fatalf("an oversized delta: %v", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the listener ended with %v", err)
	}
}
