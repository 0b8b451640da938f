package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cairn-agents/cairn/content"
)

// TestEdgesHoldChildrenAndFallWithTheirParent checks the constraints a
// collector works against: a child with an incoming edge cannot be deleted,
// and deleting the parent releases its edges.
func TestEdgesHoldChildrenAndFallWithTheirParent(t *testing.T) {
	ctx := context.Background()
	db, url := connect(t)
	s := openStore(t, db, "default", nil)
	parent, child := mustPut(t, s, []byte("manifest")), mustPut(t, s, []byte("file"))
	if err := s.PutEdges(ctx, parent, []content.Digest{child}); err != nil {
		t.Fatal(err)
	}
	conn := sql(t, url)
	_, err := conn.Exec(ctx, `DELETE FROM blobs WHERE digest = $1`, child[:])
	if pgErr := (*pgconn.PgError)(nil); !errors.As(err, &pgErr) || pgErr.Code != "23503" {
		t.Fatalf("deleting a held child: %v, want a foreign key violation", err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM blobs WHERE digest = $1`, parent[:]); err != nil {
		t.Fatalf("deleting the parent: %v", err)
	}
	if kids, err := s.Children(ctx, parent); err != nil || len(kids) != 0 {
		t.Fatalf("Children of a deleted parent = %v, %v", kids, err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM blobs WHERE digest = $1`, child[:]); err != nil {
		t.Fatalf("deleting the released child: %v", err)
	}
}
