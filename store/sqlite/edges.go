package sqlite

import (
	"context"
	"fmt"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

var _ store.Edges = (*Store)(nil)

// PutEdges implements store.Edges. The existence check and the insert share
// one immediate transaction, so no writer in this or another process can
// remove a blob between them; the foreign keys hold it afterwards.
func (s *Store) PutEdges(ctx context.Context, parent content.Digest, children []content.Digest) error {
	e, err := prepareEdge(store.Edge{Parent: parent, Children: children})
	if err != nil {
		return err
	}
	return s.writeTx(ctx, func(tx stmtTx) error { return s.putEdgesIn(ctx, tx, e) })
}

// preparedEdge is an edge checked by store.PrepareEdges, its digests as
// the JSON arrays the statements take.
type preparedEdge struct {
	parent     content.Digest
	kids, need string
}

func prepareEdge(e store.Edge) (preparedEdge, error) {
	kids, need, err := store.PrepareEdges(e.Parent, e.Children)
	if err != nil {
		return preparedEdge{}, err
	}
	needJSON, err := digestsJSON(need)
	if err != nil {
		return preparedEdge{}, err
	}
	kidsJSON, err := digestsJSON(kids)
	if err != nil {
		return preparedEdge{}, err
	}
	return preparedEdge{parent: e.Parent, kids: kidsJSON, need: needJSON}, nil
}

// putEdgesIn checks and records one edge inside tx.
func (s *Store) putEdgesIn(ctx context.Context, tx stmtTx, e preparedEdge) error {
	missing, err := missingIn(ctx, tx, s.universe, e.need)
	if err != nil {
		return fmt.Errorf("sqlite: put edges of %s: check blobs: %w", e.parent, err)
	}
	if len(missing) > 0 {
		return &blob.MissingError{Digests: missing}
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO retention_edges (universe, parent, child)
		SELECT ?, ?, value FROM json_each(?)`, s.universe, e.parent.String(), e.kids); err != nil {
		return fmt.Errorf("sqlite: put edges of %s: %w", e.parent, err)
	}
	return nil
}

// Children implements store.Edges.
func (s *Store) Children(ctx context.Context, parent content.Digest) ([]content.Digest, error) {
	strs, err := s.queryStrings(ctx, "children of "+parent.String(),
		`SELECT child FROM retention_edges WHERE universe = ? AND parent = ? ORDER BY child`, s.universe, parent.String())
	if err != nil {
		return nil, err
	}
	return parseDigests(strs)
}
