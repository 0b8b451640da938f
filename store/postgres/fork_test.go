package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

func appendSession(t *testing.T, s store.SessionLog, id string, n int, closed bool) {
	t.Helper()
	ps := []core.Proposal{{ObservedAtMs: 1, Kind: core.KindSessionOpened, Version: core.EventVersion,
		Payload: []byte(`{"sessionId":"` + id + `"}`)}}
	for len(ps) < n {
		ps = append(ps, core.Proposal{ObservedAtMs: 2, Kind: "test.note", Version: core.EventVersion, Payload: fmt.Appendf(nil, `{"n":%d}`, len(ps)+1)})
	}
	if closed {
		ps = append(ps, core.Proposal{ObservedAtMs: 3, Kind: core.KindSessionClosed, Version: core.EventVersion, Payload: []byte(`{}`)})
	}
	if _, err := s.Append(context.Background(), id, 0, ps); err != nil {
		t.Fatal(err)
	}
}

// TestForkCopiesNothing forks a long session and finds no event row written:
// the fork is one catalog row, whatever the source's length.
func TestForkCopiesNothing(t *testing.T) {
	ctx := context.Background()
	db, url := connect(t)
	s := openStore(t, db, "forks", nil)
	appendSession(t, s, "long", 3000, false)
	conn := sql(t, url)
	before := countRows(t, conn, `SELECT count(*) FROM events`)
	if _, err := s.Fork(ctx, store.ForkRequest{SessionID: "fork", Source: "long", AtSeq: 2999, AtMs: 7}); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, conn, `SELECT count(*) FROM events`); n != before {
		t.Fatalf("%d event rows after the fork, %d before", n, before)
	}
	evs, err := s.ReadBefore(ctx, "fork", 1<<40, 2)
	if err != nil || len(evs) != 2 || evs[1].Seq != 2999 || string(evs[1].Payload) != `{"n":2999}` {
		t.Fatalf("the fork's last events = %+v, %v", evs, err)
	}
}

// TestForkRacesDeletion forks a closed session while it is deleted: either
// the fork comes first and the delete is refused for it, or the delete
// comes first and the fork finds no source. Never a fork of nothing.
func TestForkRacesDeletion(t *testing.T) {
	ctx := context.Background()
	db, _ := connect(t)
	s := openStore(t, db, "forks", nil)
	for i := range 20 {
		src := fmt.Sprintf("src-%d", i)
		appendSession(t, s, src, 3, true)
		var wg sync.WaitGroup
		var forkErr, delErr error
		wg.Go(func() {
			_, forkErr = s.Fork(ctx, store.ForkRequest{SessionID: src + "-fork", Source: src, AtSeq: 2, AtMs: 1})
		})
		wg.Go(func() { _, delErr = s.DeleteSession(ctx, src, false) })
		wg.Wait()
		switch {
		case forkErr == nil && errors.Is(delErr, store.ErrSessionHasForks):
			if evs, err := s.ReadAfter(ctx, src+"-fork", 0, 0); err != nil || len(evs) != 2 {
				t.Fatalf("round %d: the fork reads %d events, %v", i, len(evs), err)
			}
		case delErr == nil && errors.Is(forkErr, store.ErrSessionNotFound):
			if _, err := s.Session(ctx, src+"-fork"); !errors.Is(err, store.ErrSessionNotFound) {
				t.Fatalf("round %d: a fork of a deleted session exists: %v", i, err)
			}
		default:
			t.Fatalf("round %d: fork %v, delete %v", i, forkErr, delErr)
		}
	}
}
