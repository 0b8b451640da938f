package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/store/postgres"
)

func note(text string) core.Proposal {
	return core.Proposal{ObservedAtMs: 1, Kind: "test.note", Version: 1, Payload: []byte(fmt.Sprintf(`{"text":%q}`, text))}
}

func refsTo(ds ...content.Digest) core.Proposal {
	return core.NewProposal(1, nil, "test.refs", ds)
}

// TestConcurrentCreatorsConflict has several appenders create the same
// session at head 0 at once: one wins, the others see the head it left, as
// a *store.HeadConflictError rather than a unique violation.
func TestConcurrentCreatorsConflict(t *testing.T) {
	db, _ := connect(t)
	s := openStore(t, db, "default", nil)
	for round := range 5 {
		id := fmt.Sprintf("new-%d", round)
		const writers = 6
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for i := range writers {
			wg.Go(func() {
				_, errs[i] = s.Append(context.Background(), id, 0, []core.Proposal{note(fmt.Sprint(i)), note("2")})
			})
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			var hc *store.HeadConflictError
			switch {
			case err == nil:
				wins++
			case errors.As(err, &hc) && hc.Expected == 0 && hc.Actual == 2:
			default:
				t.Fatalf("round %d: %v (%T), want nil or a head conflict at 2", round, err, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d creators won, want 1", round, wins)
		}
	}
}

func TestTwoAppendersAtTheSameHead(t *testing.T) {
	ctx := context.Background()
	db, _ := connect(t)
	s := openStore(t, db, "default", nil)
	if _, err := s.Append(ctx, "s", 0, []core.Proposal{note("first")}); err != nil {
		t.Fatal(err)
	}
	start := make(chan struct{})
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			<-start
			_, errs[i] = s.Append(ctx, "s", 1, []core.Proposal{note(fmt.Sprint(i))})
		})
	}
	close(start)
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("errors %v; want exactly one head conflict", errs)
	}
	if err := errors.Join(errs...); !errors.Is(err, store.ErrHeadConflict) {
		t.Fatalf("loser's error %v is not a head conflict", err)
	}
	if l, err := s.Session(ctx, "s"); err != nil || l.Head != 2 {
		t.Fatalf("head %d, %v; want 2", l.Head, err)
	}
}

// TestConcurrentBatchAppendsShareBlobs has sessions append batches at once
// that all bring the same two blobs (half of them in the other order) and
// each an edge from a blob of its own to one of them: the shared rows are
// written under every append's lock without a deadlock or a unique
// violation, and every append commits whole.
func TestConcurrentBatchAppendsShareBlobs(t *testing.T) {
	ctx := context.Background()
	db, _ := connect(t)
	s := openStore(t, db, "default", nil)
	shared, other := []byte("the instructions every session brings"), []byte("a tool's schema every session brings")
	const sessions, rounds = 6, 8
	var wg sync.WaitGroup
	errs := make([]error, sessions)
	for i := range sessions {
		wg.Go(func() {
			id := fmt.Sprintf("batch-%d", i)
			for r := range rounds {
				own := []byte(fmt.Sprintf("session %d round %d", i, r))
				blobs := [][]byte{own, shared, other}
				if i%2 == 1 {
					blobs = [][]byte{other, shared, own}
				}
				b := store.Batch{Blobs: blobs, Edges: []store.Edge{{Parent: content.Sum(own), Children: []content.Digest{content.Sum(shared)}}}}
				if _, err := s.AppendBatch(ctx, id, int64(r), []core.Proposal{refsTo(content.Sum(own), content.Sum(shared), content.Sum(other))}, b); err != nil {
					errs[i] = fmt.Errorf("%s round %d: %w", id, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i := range sessions {
		id := fmt.Sprintf("batch-%d", i)
		if l, err := s.Session(ctx, id); err != nil || l.Head != rounds {
			t.Fatalf("%s: head %d, %v; want %d", id, l.Head, err, rounds)
		}
		own := content.Sum([]byte(fmt.Sprintf("session %d round %d", i, rounds-1)))
		if kids, err := s.Children(ctx, own); err != nil || len(kids) != 1 || kids[0] != content.Sum(shared) {
			t.Fatalf("%s: children of its last blob %v, %v; want the shared blob", id, kids, err)
		}
	}
}

// TestRootedBlobCannotBeDeleted: once an append has rooted a blob, a
// collector's DELETE of its row fails on the foreign key.
func TestRootedBlobCannotBeDeleted(t *testing.T) {
	ctx := context.Background()
	db, url := connect(t)
	s := openStore(t, db, "default", nil)
	d := mustPut(t, s, []byte("rooted"))
	if _, err := s.Append(ctx, "s", 0, []core.Proposal{refsTo(d)}); err != nil {
		t.Fatal(err)
	}
	_, err := sql(t, url).Exec(ctx, `DELETE FROM blobs WHERE digest = $1`, d[:])
	if pgErr := (*pgconn.PgError)(nil); !errors.As(err, &pgErr) || pgErr.Code != "23503" {
		t.Fatalf("deleting a rooted blob: %v, want a foreign key violation", err)
	}
}

// TestAppendWaitsForAConcurrentDelete runs an append while a collector's
// DELETE of a referenced blob is uncommitted: the append waits for it, and
// then fails if the delete commits or succeeds if it rolls back.
func TestAppendWaitsForAConcurrentDelete(t *testing.T) {
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
			ctx := context.Background()
			db, url := connect(t)
			s := openStore(t, db, "default", nil)
			d := mustPut(t, s, []byte("about to be collected"))
			collector, err := sql(t, url).Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := collector.Exec(ctx, `DELETE FROM blobs WHERE digest = $1`, d[:]); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := s.Append(ctx, "s", 0, []core.Proposal{note("x"), refsTo(d)})
				done <- err
			}()
			select {
			case err := <-done:
				t.Fatalf("append finished (%v) while the delete was uncommitted", err)
			case <-time.After(300 * time.Millisecond):
			}
			if commit {
				err = collector.Commit(ctx)
			} else {
				err = collector.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			err = <-done
			var me *blob.MissingError
			switch {
			case commit && (!errors.As(err, &me) || !slices.Equal(me.Digests, []content.Digest{d})):
				t.Fatalf("append after the delete committed: %v, want MissingError for %s", err, d)
			case !commit && err != nil:
				t.Fatalf("append after the delete rolled back: %v", err)
			}
		})
	}
}

// TestSessionsOrderByBytes: ids sort by their bytes, as in the other
// backends, whatever collation the database was created with.
func TestSessionsOrderByBytes(t *testing.T) {
	ctx := context.Background()
	db, _ := connect(t)
	s := openStore(t, db, "default", nil)
	ids := []string{"b", "B", "a", "_x", "é", "Z", "a-1", "a_1", "10", "9"}
	for _, id := range ids {
		if _, err := s.Append(ctx, id, 0, []core.Proposal{note(id)}); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(ids)
	ls, err := s.Sessions(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range ls {
		got = append(got, l.SessionID)
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("Sessions order %q, want byte order %q", got, ids)
	}
	ls, err = s.Sessions(ctx, "a", 2)
	if err != nil || len(ls) != 2 || ls[0].SessionID != "a-1" || ls[1].SessionID != "a_1" {
		t.Fatalf("Sessions after %q = %v, %v", "a", ls, err)
	}
}

// TestFailedWriteRollsBackEverything makes the write half of an append fail
// (a constraint the test adds) and checks that nothing of it remains, that
// no transaction is left open, and that the pool keeps working.
func TestFailedWriteRollsBackEverything(t *testing.T) {
	ctx := context.Background()
	db, url := connect(t)
	s := openStore(t, db, "default", nil)
	conn := sql(t, url)
	if _, err := conn.Exec(ctx, `ALTER TABLE events ADD CONSTRAINT no_boom CHECK (kind <> 'test.boom')`); err != nil {
		t.Fatal(err)
	}
	d := mustPut(t, s, []byte("rooted by the failed append"))
	if _, err := s.Append(ctx, "s", 0, []core.Proposal{note("first")}); err != nil {
		t.Fatal(err)
	}
	boom := core.Proposal{ObservedAtMs: 9, Kind: "test.boom", Version: 1, Payload: []byte(`{}`)}
	for i := range 2 * postgres.DefaultMaxConns { // more failures than pooled connections
		if _, err := s.Append(ctx, "s", 1, []core.Proposal{refsTo(d), boom}); err == nil {
			t.Fatalf("append %d violating a constraint succeeded", i)
		}
		if _, err := s.Append(ctx, "new", 0, []core.Proposal{note("x"), boom}); err == nil {
			t.Fatalf("append %d creating a session and violating a constraint succeeded", i)
		}
	}
	if l, err := s.Session(ctx, "s"); err != nil || l.Head != 1 || l.UpdatedAtMs != 1 {
		t.Fatalf("session after failed appends: %+v, %v", l, err)
	}
	if _, err := s.Session(ctx, "new"); !errors.Is(err, store.ErrSessionNotFound) {
		t.Fatalf("failed creation left a session: %v", err)
	}
	if roots, err := s.Roots(ctx, "s"); err != nil || len(roots) != 0 {
		t.Fatalf("failed append recorded roots %v, %v", roots, err)
	}
	if n := countRows(t, conn, `SELECT count(*) FROM events`); n != 1 {
		t.Fatalf("%d events stored, want 1", n)
	}
	if n := countRows(t, conn, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state LIKE 'idle in transaction%'`); n != 0 {
		t.Fatalf("%d connections left inside a transaction", n)
	}
	for h := int64(1); h <= 2*postgres.DefaultMaxConns; h++ {
		if _, err := s.Append(ctx, "s", h, []core.Proposal{note(fmt.Sprint(h))}); err != nil {
			t.Fatalf("append after failures: %v", err)
		}
	}
}
