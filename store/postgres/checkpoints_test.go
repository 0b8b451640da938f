package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/store/postgres"
)

func openedSession(t *testing.T, s *postgres.Store, id string, n int) {
	t.Helper()
	ps := []core.Proposal{{ObservedAtMs: 1, Kind: core.KindSessionOpened, Version: core.EventVersion,
		Payload: []byte(`{"sessionId":"` + id + `"}`)}}
	for len(ps) < n {
		ps = append(ps, core.Proposal{ObservedAtMs: 2, Kind: "test.note", Version: core.EventVersion, Payload: []byte(`{}`)})
	}
	if _, err := s.Append(context.Background(), id, 0, ps); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointsHoldTheirBlobs checks the constraint a collector works
// against: deleting a blob a checkpoint references fails; once the
// checkpoint is pruned or replaced, the blob can go.
func TestCheckpointsHoldTheirBlobs(t *testing.T) {
	ctx := context.Background()
	db, url := connect(t)
	s := openStore(t, db, "default", nil)
	openedSession(t, s, "s1", 5)
	c2, c4, c4b := mustPut(t, s, []byte("checkpoint 2")), mustPut(t, s, []byte("checkpoint 4")), mustPut(t, s, []byte("checkpoint 4b"))
	for seq, d := range map[int64]content.Digest{2: c2, 4: c4} {
		if err := s.PutCheckpoint(ctx, "s1", seq, d); err != nil {
			t.Fatal(err)
		}
	}
	conn := sql(t, url)
	del := func(d content.Digest) error {
		_, err := conn.Exec(ctx, `DELETE FROM blobs WHERE universe = 'default' AND digest = $1`, d[:])
		return err
	}
	wantHeld := func(what string, d content.Digest) {
		t.Helper()
		if pgErr := (*pgconn.PgError)(nil); !errors.As(del(d), &pgErr) || pgErr.Code != "23503" {
			t.Fatalf("deleting %s: want a foreign key violation", what)
		}
	}
	wantHeld("a checkpoint's blob", c2)
	if n, err := s.PruneCheckpoints(ctx, "s1", 4); err != nil || n != 1 {
		t.Fatalf("PruneCheckpoints = %d, %v", n, err)
	}
	if err := del(c2); err != nil {
		t.Fatalf("deleting a pruned checkpoint's blob: %v", err)
	}
	if err := s.PutCheckpoint(ctx, "s1", 4, c4b); err != nil {
		t.Fatal(err)
	}
	if err := del(c4); err != nil {
		t.Fatalf("deleting a replaced checkpoint's blob: %v", err)
	}
	wantHeld("the replacing checkpoint's blob", c4b)
}

// TestCheckpointsAreUniverseScoped: universe B sees none of A's
// checkpoints, cannot checkpoint a session only A has, nor point a
// checkpoint at a blob only A has.
func TestCheckpointsAreUniverseScoped(t *testing.T) {
	ctx := context.Background()
	db, _ := connect(t)
	a, b := openStore(t, db, "alpha", nil), openStore(t, db, "beta", nil)
	openedSession(t, a, "s1", 3)
	onlyA := mustPut(t, a, []byte("alpha's checkpoint"))
	if err := a.PutCheckpoint(ctx, "s1", 3, onlyA); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.LatestCheckpoint(ctx, "s1", 0); !errors.Is(err, store.ErrCheckpointNotFound) {
		t.Fatalf("beta reads alpha's checkpoint: %v", err)
	}
	if err := b.PutCheckpoint(ctx, "s1", 1, onlyA); !errors.Is(err, store.ErrSessionNotFound) {
		t.Fatalf("beta checkpoints alpha's session: %v", err)
	}
	openedSession(t, b, "s1", 1)
	var me *blob.MissingError
	if err := b.PutCheckpoint(ctx, "s1", 1, onlyA); !errors.As(err, &me) {
		t.Fatalf("beta points a checkpoint at alpha's blob: %v, want *blob.MissingError", err)
	}
	if n, err := b.PruneCheckpoints(ctx, "s1", 100); err != nil || n != 0 {
		t.Fatalf("beta prunes %d, %v", n, err)
	}
	if seq, d, err := a.LatestCheckpoint(ctx, "s1", 0); err != nil || seq != 3 || d != onlyA {
		t.Fatalf("alpha's checkpoint = %d, %s, %v", seq, d, err)
	}
}
