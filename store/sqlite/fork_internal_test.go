package sqlite

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/cairn-agents/cairn/store"
)

// undoLineage takes a database back to before version 5 (lineage), so the
// upgrade tests of earlier versions can replay it.
var undoLineage = []string{
	`ALTER TABLE blobs DROP COLUMN encoding`, `ALTER TABLE events DROP COLUMN encoding`,
	`DROP INDEX sessions_forks`, `DROP INDEX sessions_newest`,
	`ALTER TABLE sessions DROP COLUMN fork_source`, `ALTER TABLE sessions DROP COLUMN fork_at`,
	`ALTER TABLE sessions DROP COLUMN fork_depth`, `ALTER TABLE sessions DROP COLUMN fork_segments`,
	`ALTER TABLE sessions DROP COLUMN clone_source`, `DELETE FROM schema_migrations WHERE version >= 5`,
}

func countEvents(t *testing.T, s *Store) int64 {
	t.Helper()
	var n int64
	if err := s.reader.QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestForkCopiesNothing forks a long session and finds no event written: the
// fork is one catalog row, whatever the source's length.
func TestForkCopiesNothing(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	openedSession(t, s, "long", 2000)
	before := countEvents(t, s)
	life, err := s.Fork(ctx, store.ForkRequest{SessionID: "fork", Source: "long", AtSeq: 1999, AtMs: 7})
	if err != nil {
		t.Fatal(err)
	}
	if n := countEvents(t, s); n != before || life.Head != 1999 {
		t.Fatalf("events %d after the fork (was %d), head %d", n, before, life.Head)
	}
	evs, err := s.ReadBefore(ctx, "fork", 10_000, 2)
	if err != nil || len(evs) != 2 || evs[1].Seq != 1999 {
		t.Fatalf("fork's last events = %+v, %v", evs, err)
	}
}

// TestVersion4DatabaseGainsLineage reopens a database as the previous
// release left it (no lineage columns) and forks one of its sessions.
func TestVersion4DatabaseGainsLineage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	openedSession(t, s, "old", 3)
	for _, q := range undoLineage {
		if _, err := s.writes.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	if src, err := s.Source(ctx, "old"); err != nil || src != nil {
		t.Fatalf("lineage of a session from before the upgrade: %+v, %v", src, err)
	}
	if _, err := s.Fork(ctx, store.ForkRequest{SessionID: "new", Source: "old", AtSeq: 2, AtMs: 9}); err != nil {
		t.Fatalf("Fork after upgrade: %v", err)
	}
	evs, err := s.ReadAfter(ctx, "new", 0, 0)
	if err != nil || len(evs) != 2 {
		t.Fatalf("fork reads %d events, %v", len(evs), err)
	}
	ls, err := s.SessionsBefore(ctx, nil, 0)
	if err != nil || len(ls) != 2 || ls[0].SessionID != "new" {
		raw, _ := json.Marshal(ls)
		t.Fatalf("SessionsBefore = %s, %v", raw, err)
	}
}
