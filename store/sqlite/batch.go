package sqlite

import (
	"context"

	"github.com/cairn-agents/cairn/store"
)

var _ store.BatchWriter = (*Store)(nil)

// WriteBatch implements store.BatchWriter. A blob too large to be inline
// is put first on its own (its body must reach objects/ before a row names
// it); the inline blobs and every edge share one immediate transaction.
func (s *Store) WriteBatch(ctx context.Context, b store.Batch) error {
	edges := make([]preparedEdge, len(b.Edges))
	for i, e := range b.Edges {
		var err error
		if edges[i], err = prepareEdge(e); err != nil {
			return err
		}
	}
	var inline [][]byte
	for _, data := range b.Blobs {
		if len(data) <= InlineMax {
			inline = append(inline, data)
		} else if _, err := s.Put(ctx, data); err != nil {
			return err
		}
	}
	return s.writeTx(ctx, func(tx stmtTx) error {
		for _, data := range inline {
			if _, err := s.putInline(ctx, tx, data); err != nil {
				return err
			}
		}
		for _, e := range edges {
			if err := s.putEdgesIn(ctx, tx, e); err != nil {
				return err
			}
		}
		return nil
	})
}
