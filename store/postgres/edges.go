package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

// PutEdges implements store.Edges. Parent and children are key-share locked
// in the transaction that inserts the edges, so a concurrent collector
// cannot delete one of them between the check and the insert; afterwards
// the edges' foreign keys protect the children.
func (s *Store) PutEdges(ctx context.Context, parent content.Digest, children []content.Digest) error {
	kids, need, err := store.PrepareEdges(parent, children)
	if err != nil {
		return err
	}
	return inTx(ctx, s.pool, func(tx pgx.Tx) error { return s.putEdgesIn(ctx, tx, parent, kids, need) })
}

// putEdgesIn checks and records one edge, prepared by store.PrepareEdges,
// inside tx.
func (s *Store) putEdgesIn(ctx context.Context, tx pgx.Tx, parent content.Digest, kids, need []content.Digest) error {
	rows, err := tx.Query(ctx, `SELECT digest FROM blobs WHERE universe = $1 AND digest = ANY ($2::bytea[])
		ORDER BY digest FOR KEY SHARE`, s.universe, digestArgs(need))
	if err != nil {
		return fmt.Errorf("postgres: put edges of %s: lock blobs: %w", parent, err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return fmt.Errorf("postgres: put edges of %s: lock blobs: %w", parent, err)
	}
	if missing := absent(need, found); len(missing) > 0 {
		return &blob.MissingError{Digests: missing}
	}
	if len(kids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, insertEdgesSQL, s.universe, parent[:], digestArgs(kids)); err != nil {
		return fmt.Errorf("postgres: put edges of %s: %w", parent, err)
	}
	return nil
}

// insertEdgesSQL records a parent's edges to its children.
const insertEdgesSQL = `INSERT INTO retention_edges (universe, parent, child)
	SELECT $1, $2, unnest($3::bytea[]) ON CONFLICT DO NOTHING`

// Children implements store.Edges.
func (s *Store) Children(ctx context.Context, parent content.Digest) ([]content.Digest, error) {
	rows, err := s.pool.Query(ctx, `SELECT child FROM retention_edges WHERE universe = $1 AND parent = $2 ORDER BY child`,
		s.universe, parent[:])
	if err != nil {
		return nil, fmt.Errorf("postgres: children of %s: %w", parent, err)
	}
	raw, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("postgres: children of %s: %w", parent, err)
	}
	return parseDigests(raw)
}
