package sqlite

import (
	"context"

	"github.com/cairn-agents/cairn/store"
)

var (
	_ store.BatchWriter   = (*Store)(nil)
	_ store.BatchAppender = (*Store)(nil)
)

// WriteBatch implements store.BatchWriter: the inline blobs and every
// edge share one immediate transaction.
func (s *Store) WriteBatch(ctx context.Context, b store.Batch) error {
	batch, err := s.prepareBatch(ctx, b)
	if err != nil {
		return err
	}
	return s.writeTx(ctx, func(tx stmtTx) error { return s.writeBatchIn(ctx, tx, batch) })
}

// preparedBatch is a batch ready for its transaction: its edges checked
// and its large blobs already stored.
type preparedBatch struct {
	inline [][]byte
	edges  []preparedEdge
}

// prepareBatch checks b's edges and puts its blobs too large to be
// inline, each on its own (a body must reach objects/ before a row names
// it); an invalid edge stores nothing.
func (s *Store) prepareBatch(ctx context.Context, b store.Batch) (preparedBatch, error) {
	var p preparedBatch
	for _, e := range b.Edges {
		pe, err := prepareEdge(e)
		if err != nil {
			return preparedBatch{}, err
		}
		p.edges = append(p.edges, pe)
	}
	for _, data := range b.Blobs {
		if len(data) <= InlineMax {
			p.inline = append(p.inline, data)
		} else if _, err := s.Put(ctx, data); err != nil {
			return preparedBatch{}, err
		}
	}
	return p, nil
}

// writeBatchIn writes a prepared batch inside tx.
func (s *Store) writeBatchIn(ctx context.Context, tx stmtTx, p preparedBatch) error {
	for _, data := range p.inline {
		if _, err := s.putInline(ctx, tx, data); err != nil {
			return err
		}
	}
	for _, e := range p.edges {
		if err := s.putEdgesIn(ctx, tx, e); err != nil {
			return err
		}
	}
	return nil
}
