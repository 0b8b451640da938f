package store

import (
	"context"
	"fmt"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
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
// must be one store's (an edge can only name blobs its own store holds);
// edges may be nil for a batch without edges.
func WriteBatch(ctx context.Context, blobs blob.Store, edges EdgeWriter, b Batch) error {
	if w, ok := edges.(BatchWriter); ok {
		return w.WriteBatch(ctx, b)
	}
	if edges == nil && len(b.Edges) > 0 {
		return fmt.Errorf("%w: no edge store to record them", ErrInvalidEdge)
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

// BatchAppender is a log that appends events together with a Batch, in
// one transaction: the blobs a command brings (a run's input text) are
// stored only if its events are, and cost no commit of their own. The
// batch is written first, so the events may name its blobs; a failed
// append writes none of it (a large blob may remain, unreferenced, as
// in BatchWriter).
type BatchAppender interface {
	AppendBatch(ctx context.Context, sessionID string, expectedHead int64, proposals []core.Proposal, b Batch) ([]core.Event, error)
}

// AppendBatch appends proposals with b through log when it is a
// BatchAppender; otherwise it writes b (blobs into blobs, edges through
// log, which must then record edges) and then appends.
func AppendBatch(ctx context.Context, log SessionLog, blobs blob.Store, sessionID string, expectedHead int64, proposals []core.Proposal, b Batch) ([]core.Event, error) {
	if len(b.Blobs) == 0 && len(b.Edges) == 0 {
		return log.Append(ctx, sessionID, expectedHead, proposals)
	}
	if a, ok := log.(BatchAppender); ok {
		return a.AppendBatch(ctx, sessionID, expectedHead, proposals, b)
	}
	edges, _ := log.(EdgeWriter)
	if err := WriteBatch(ctx, blobs, edges, b); err != nil {
		return nil, err
	}
	return log.Append(ctx, sessionID, expectedHead, proposals)
}
