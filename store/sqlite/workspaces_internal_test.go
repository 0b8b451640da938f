package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

// TestWorkspaceHeadsAndSnapshotsHoldTheirManifests checks the constraints a
// collector works against: a blob that a head or a snapshot references
// cannot be deleted; once the head moves away, the old manifest can be.
func TestWorkspaceHeadsAndSnapshotsHoldTheirManifests(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	m1, m2, snap := mustPut(t, s, []byte("manifest 1")), mustPut(t, s, []byte("manifest 2")), mustPut(t, s, []byte("snapshot"))
	if _, err := s.CreateWorkspace(ctx, "main", m1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	del := func(d content.Digest) error {
		_, err := s.writes.ExecContext(ctx, `DELETE FROM blobs WHERE universe = ? AND digest = ?`, s.universe, d.String())
		return err
	}
	if err := del(m1); err == nil {
		t.Fatal("deleted a manifest a workspace head holds")
	}
	if err := del(snap); err == nil {
		t.Fatal("deleted a manifest a snapshot record holds")
	}
	if _, err := s.MoveHead(ctx, "main", 1, m2); err != nil {
		t.Fatal(err)
	}
	if err := del(m1); err != nil {
		t.Fatalf("deleting the manifest the head moved away from: %v", err)
	}
	if err := del(m2); err == nil {
		t.Fatal("deleted the new head")
	}
}

// TestWorkspacesUseTheStoreClockAndUniverse checks timestamps come from
// WithNow and that another universe in the same file sees nothing.
func TestWorkspacesUseTheStoreClockAndUniverse(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := time.UnixMilli(1_000)
	now := func() time.Time { return clock }
	a := openTest(t, dir, WithNow(now))
	m := mustPut(t, a, []byte("manifest"))
	w, err := a.CreateWorkspace(ctx, "main", m)
	if err != nil || w.CreatedAtMs != 1_000 || w.UpdatedAtMs != 1_000 {
		t.Fatalf("CreateWorkspace = %+v, %v; want times 1000", w, err)
	}
	clock = time.UnixMilli(2_000)
	w, err = a.MoveHead(ctx, "main", 1, m)
	if err != nil || w.CreatedAtMs != 1_000 || w.UpdatedAtMs != 2_000 {
		t.Fatalf("MoveHead = %+v, %v; want created 1000, updated 2000", w, err)
	}
	if sn, err := a.PutSnapshot(ctx, m); err != nil || sn.CreatedAtMs != 2_000 {
		t.Fatalf("PutSnapshot = %+v, %v; want time 2000", sn, err)
	}

	b := openTest(t, dir, WithUniverse("other"))
	if _, err := b.Workspace(ctx, "main"); !errors.Is(err, store.ErrWorkspaceNotFound) {
		t.Fatalf("other universe reads main: %v", err)
	}
	if _, err := b.Snapshot(ctx, m); !errors.Is(err, store.ErrSnapshotNotFound) {
		t.Fatalf("other universe reads the snapshot: %v", err)
	}
	if _, err := b.CreateWorkspace(ctx, "main", m); err == nil {
		t.Fatal("other universe pointed a head at a blob it does not have")
	}
	if all, err := b.Workspaces(ctx, "", 0); err != nil || len(all) != 0 {
		t.Fatalf("other universe lists %+v, %v", all, err)
	}
}

// TestVersion2DatabaseGainsWorkspaces reopens a database as the previous
// release left it (no workspaces or snapshots) and finds the tables added.
func TestVersion2DatabaseGainsWorkspaces(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	m := mustPut(t, s, []byte("manifest"))
	for _, q := range append(undoLineage, []string{`DROP TABLE checkpoints`, `DROP TABLE snapshots`, `DROP TABLE workspaces`, `DELETE FROM schema_migrations WHERE version >= 3`}...) {
		if _, err := s.writes.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	if _, err := s.CreateWorkspace(ctx, "main", m); err != nil {
		t.Fatalf("CreateWorkspace after upgrade: %v", err)
	}
	if _, err := s.PutSnapshot(ctx, m); err != nil {
		t.Fatalf("PutSnapshot after upgrade: %v", err)
	}
}
