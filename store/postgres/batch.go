package postgres

import (
	"bytes"
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

var _ store.BatchWriter = (*Store)(nil)

// WriteBatch implements store.BatchWriter. A blob too large to be inline
// is put first on its own (its object is uploaded before a row names it);
// the inline blobs, in digest order so that two batches sharing blobs lock
// them in the same order, and every edge share one transaction.
func (s *Store) WriteBatch(ctx context.Context, b store.Batch) error {
	type edge struct {
		parent     content.Digest
		kids, need []content.Digest
	}
	edges := make([]edge, len(b.Edges))
	for i, e := range b.Edges {
		kids, need, err := store.PrepareEdges(e.Parent, e.Children)
		if err != nil {
			return err
		}
		edges[i] = edge{parent: e.Parent, kids: kids, need: need}
	}
	type inlineBlob struct {
		d    content.Digest
		data []byte
	}
	var inline []inlineBlob
	for _, data := range b.Blobs {
		if len(data) <= InlineMax {
			inline = append(inline, inlineBlob{content.Sum(data), data})
		} else if _, err := s.Put(ctx, data); err != nil {
			return err
		}
	}
	slices.SortFunc(inline, func(a, b inlineBlob) int { return bytes.Compare(a.d[:], b.d[:]) })
	now := s.now()
	return inTx(ctx, s.pool, func(tx pgx.Tx) error {
		for _, bl := range inline {
			if err := s.putInline(ctx, tx, bl.d, bl.data, now); err != nil {
				return err
			}
		}
		for _, e := range edges {
			if err := s.putEdgesIn(ctx, tx, e.parent, e.kids, e.need); err != nil {
				return err
			}
		}
		return nil
	})
}
