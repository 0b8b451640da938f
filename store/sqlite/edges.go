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
	kids, need, err := store.PrepareEdges(parent, children)
	if err != nil {
		return err
	}
	needJSON, err := digestsJSON(need)
	if err != nil {
		return err
	}
	kidsJSON, err := digestsJSON(kids)
	if err != nil {
		return err
	}
	return s.writeTx(ctx, func(tx stmtTx) error {
		missing, err := missingIn(ctx, tx, s.universe, needJSON)
		if err != nil {
			return fmt.Errorf("sqlite: put edges of %s: check blobs: %w", parent, err)
		}
		if len(missing) > 0 {
			return &blob.MissingError{Digests: missing}
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO retention_edges (universe, parent, child)
			SELECT ?, ?, value FROM json_each(?)`, s.universe, parent.String(), kidsJSON); err != nil {
			return fmt.Errorf("sqlite: put edges of %s: %w", parent, err)
		}
		return nil
	})
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
