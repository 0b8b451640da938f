package sqlite

import (
	"context"
	"testing"

	"github.com/cairn-agents/cairn/content"
)

// TestEdgesHoldChildrenAndFallWithTheirParent checks the constraints a
// collector works against: a child with an incoming edge cannot be deleted,
// and deleting the parent releases its edges.
func TestEdgesHoldChildrenAndFallWithTheirParent(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	parent, child := mustPut(t, s, []byte("manifest")), mustPut(t, s, []byte("file"))
	if err := s.PutEdges(ctx, parent, []content.Digest{child}); err != nil {
		t.Fatal(err)
	}
	del := func(d content.Digest) error {
		_, err := s.writes.ExecContext(ctx, `DELETE FROM blobs WHERE universe = ? AND digest = ?`, s.universe, d.String())
		return err
	}
	if err := del(child); err == nil {
		t.Fatal("deleted a child an edge still holds")
	}
	if err := del(parent); err != nil {
		t.Fatalf("deleting the parent: %v", err)
	}
	if kids, err := s.Children(ctx, parent); err != nil || len(kids) != 0 {
		t.Fatalf("Children of a deleted parent = %v, %v", kids, err)
	}
	if err := del(child); err != nil {
		t.Fatalf("deleting the released child: %v", err)
	}
}

// TestVersion1DatabaseGainsEdges reopens a database as the previous release
// left it (no retention_edges) and finds the table added.
func TestVersion1DatabaseGainsEdges(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	parent, child := mustPut(t, s, []byte("manifest")), mustPut(t, s, []byte("file"))
	for _, q := range append(undoLineage, []string{`DROP TABLE checkpoints`, `DROP TABLE snapshots`, `DROP TABLE workspaces`, `DROP TABLE retention_edges`,
		`DELETE FROM schema_migrations WHERE version >= 2`}...) {
		if _, err := s.writes.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	if err := s.PutEdges(ctx, parent, []content.Digest{child}); err != nil {
		t.Fatalf("PutEdges after upgrade: %v", err)
	}
	if kids, err := s.Children(ctx, parent); err != nil || len(kids) != 1 || kids[0] != child {
		t.Fatalf("Children = %v, %v", kids, err)
	}
}
