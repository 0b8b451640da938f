package postgres

import (
	"bytes"
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

var (
	_ store.BatchWriter   = (*Store)(nil)
	_ store.BatchAppender = (*Store)(nil)
)

// WriteBatch implements store.BatchWriter. A blob too large to be inline
// is put first on its own (its object is uploaded before a row names it);
// the inline blobs, in digest order so that two batches sharing blobs lock
// them in the same order, and every edge share one transaction.
func (s *Store) WriteBatch(ctx context.Context, b store.Batch) error {
	p, err := s.prepareBatch(ctx, b)
	if err != nil {
		return err
	}
	now := s.now()
	return inTx(ctx, s.pool, func(tx pgx.Tx) error {
		for _, bl := range p.inline {
			if err := s.putInline(ctx, tx, bl.d, bl.data, now); err != nil {
				return err
			}
		}
		for _, e := range p.edges {
			if err := s.putEdgesIn(ctx, tx, e.parent, e.kids, e.need); err != nil {
				return err
			}
		}
		return nil
	})
}

// preparedBatch is a batch checked and ready for a transaction: its large
// blobs already stored, its inline ones in digest order.
type preparedBatch struct {
	inline []inlineBlob
	edges  []preparedEdge
}

type inlineBlob struct {
	d    content.Digest
	data []byte
}

type preparedEdge struct {
	parent     content.Digest
	kids, need []content.Digest
}

// prepareBatch checks b's edges and puts its blobs too large to be inline,
// each on its own, before any transaction names them.
func (s *Store) prepareBatch(ctx context.Context, b store.Batch) (preparedBatch, error) {
	var p preparedBatch
	for _, e := range b.Edges {
		kids, need, err := store.PrepareEdges(e.Parent, e.Children)
		if err != nil {
			return p, err
		}
		p.edges = append(p.edges, preparedEdge{parent: e.Parent, kids: kids, need: need})
	}
	for _, data := range b.Blobs {
		if len(data) <= InlineMax {
			p.inline = append(p.inline, inlineBlob{content.Sum(data), data})
		} else if _, err := s.Put(ctx, data); err != nil {
			return p, err
		}
	}
	slices.SortFunc(p.inline, func(a, b inlineBlob) int { return bytes.Compare(a.d[:], b.d[:]) })
	return p, nil
}

// needs is every blob the edges need, sorted, without repeats.
func (p preparedBatch) needs() []content.Digest {
	var out []content.Digest
	for _, e := range p.edges {
		out = append(out, e.need...)
	}
	content.SortDigests(out)
	return slices.Compact(out)
}
