package store

import (
	"context"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
)

// Edge is one parent blob and the children its format names.
type Edge struct {
	Parent   content.Digest
	Children []content.Digest
}

// Batch is blobs and retention edges written together. One unit of work
// (a turn's answer with its cache-report list, a checkpoint's chunks and
// index) writes many small blobs; a batch commits them in one transaction
// instead of one each.
type Batch struct {
	Blobs [][]byte
	Edges []Edge
}

// BatchWriter is a store that writes a Batch at once. Each blob is stored as
// Put stores it; each edge is recorded as PutEdges records it, and may name
// blobs of the same batch. When an edge names a blob that is in neither the
// batch nor the store, the result is a *blob.MissingError and no edge is
// recorded; blobs of the batch may have been stored (like any unreferenced
// blob, they are collected after their grace).
type BatchWriter interface {
	WriteBatch(ctx context.Context, b Batch) error
}

// EdgeWriter records retention edges (see Edges).
type EdgeWriter interface {
	PutEdges(ctx context.Context, parent content.Digest, children []content.Digest) error
}

// WriteBatch writes b through edges when it is a BatchWriter; otherwise
// it puts each blob into blobs and then records each edge. blobs and edges
// must be one store's (an edge can only name blobs its own store holds).
func WriteBatch(ctx context.Context, blobs blob.Store, edges EdgeWriter, b Batch) error {
	if w, ok := edges.(BatchWriter); ok {
		return w.WriteBatch(ctx, b)
	}
	for _, data := range b.Blobs {
		if _, err := blobs.Put(ctx, data); err != nil {
			return err
		}
	}
	for _, e := range b.Edges {
		if err := edges.PutEdges(ctx, e.Parent, e.Children); err != nil {
			return err
		}
	}
	return nil
}
