package sqlite

import (
	"context"
	"errors"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

func openedSession(t *testing.T, s *Store, id string, n int) {
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
// against: a blob a checkpoint references cannot be deleted; once the
// checkpoint is pruned or replaced, it can be.
func TestCheckpointsHoldTheirBlobs(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	openedSession(t, s, "s1", 5)
	c2, c4, c4b := mustPut(t, s, []byte("checkpoint 2")), mustPut(t, s, []byte("checkpoint 4")), mustPut(t, s, []byte("checkpoint 4b"))
	for seq, d := range map[int64]content.Digest{2: c2, 4: c4} {
		if err := s.PutCheckpoint(ctx, "s1", seq, d); err != nil {
			t.Fatal(err)
		}
	}
	del := func(d content.Digest) error {
		_, err := s.writes.ExecContext(ctx, `DELETE FROM blobs WHERE universe = ? AND digest = ?`, s.universe, d.String())
		return err
	}
	if err := del(c2); err == nil {
		t.Fatal("deleted a blob a checkpoint holds")
	}
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
	if err := del(c4b); err == nil {
		t.Fatal("deleted the blob of the replacing checkpoint")
	}
}

// TestCheckpointsAreUniverseScoped: another universe in the same file sees
// no checkpoint, cannot checkpoint a session it does not have, nor point a
// checkpoint at a blob only the first universe has.
func TestCheckpointsAreUniverseScoped(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := openTest(t, dir)
	b := openTest(t, dir, WithUniverse("other"))
	openedSession(t, a, "s1", 3)
	onlyA := mustPut(t, a, []byte("alpha's checkpoint"))
	if err := a.PutCheckpoint(ctx, "s1", 3, onlyA); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.LatestCheckpoint(ctx, "s1", 0); !errors.Is(err, store.ErrCheckpointNotFound) {
		t.Fatalf("other universe reads the checkpoint: %v", err)
	}
	if err := b.PutCheckpoint(ctx, "s1", 1, onlyA); !errors.Is(err, store.ErrSessionNotFound) {
		t.Fatalf("other universe checkpoints a session it lacks: %v", err)
	}
	openedSession(t, b, "s1", 1)
	var me *blob.MissingError
	if err := b.PutCheckpoint(ctx, "s1", 1, onlyA); !errors.As(err, &me) {
		t.Fatalf("other universe points a checkpoint at a blob it lacks: %v", err)
	}
	if n, err := b.PruneCheckpoints(ctx, "s1", 100); err != nil || n != 0 {
		t.Fatalf("other universe prunes %d, %v", n, err)
	}
	if seq, d, err := a.LatestCheckpoint(ctx, "s1", 0); err != nil || seq != 3 || d != onlyA {
		t.Fatalf("first universe's checkpoint = %d, %s, %v", seq, d, err)
	}
}

// TestVersion3DatabaseGainsCheckpoints reopens a database as the previous
// release left it (no checkpoints) and finds the table added.
func TestVersion3DatabaseGainsCheckpoints(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	openedSession(t, s, "s1", 2)
	d := mustPut(t, s, []byte("checkpoint"))
	for _, q := range append(undoLineage, []string{`DROP TABLE checkpoints`, `DELETE FROM schema_migrations WHERE version >= 4`}...) {
		if _, err := s.writes.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	if err := s.PutCheckpoint(ctx, "s1", 2, d); err != nil {
		t.Fatalf("PutCheckpoint after upgrade: %v", err)
	}
}
