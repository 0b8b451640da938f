package runtime

import (
	"context"
	"slices"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

// staged is what one generation writes through: its puts wait in memory
// until the next PutEdges, or Flush, writes them with that edge as one
// store.Batch. A turn's answer, its tool calls' arguments, its
// cache-report list and that list's edge then cost one transaction
// instead of one each. Reads and existence checks see the waiting blobs.
type staged struct {
	blob.Store // the executor's blobs: reads, and what is already stored
	Files      // the same store's workspaces and edges

	pending [][]byte
	held    map[content.Digest]int // index in pending

	// hold keeps the edges too, for the host to write everything with the
	// append that admits the generation's result (see GenerateHeld).
	hold  bool
	edges []store.Edge
	// rooted is a blob the session's committed events name (the last
	// cache-report list): its root keeps it stored, so an edge to it
	// needs no check.
	rooted content.Digest
}

// stage returns an executor that writes through a staged store, and that
// store; without Files (no edges, no batches) it returns x and nil.
func (x *Executor) stage(hold bool) (*Executor, *staged) {
	if x.Files == nil {
		return x, nil
	}
	s := &staged{Store: x.Blobs, Files: x.Files, held: map[content.Digest]int{}, hold: hold}
	y := *x
	y.Blobs, y.Files = s, s
	return &y, s
}

// Put keeps a copy of data until the next write; it is stored by then.
func (s *staged) Put(ctx context.Context, data []byte) (content.Digest, error) {
	if err := ctx.Err(); err != nil {
		return content.Digest{}, err
	}
	d := content.Sum(data)
	if _, ok := s.held[d]; !ok {
		s.held[d] = len(s.pending)
		s.pending = append(s.pending, slices.Clone(data))
	}
	return d, nil
}

func (s *staged) Get(ctx context.Context, d content.Digest) ([]byte, error) {
	if i, ok := s.held[d]; ok {
		return slices.Clone(s.pending[i]), nil
	}
	return s.Store.Get(ctx, d)
}

// GetMany implements blob.ManyGetter: what it holds, and the rest from
// the store in one call.
func (s *staged) GetMany(ctx context.Context, ds []content.Digest) (map[content.Digest][]byte, error) {
	var rest []content.Digest
	for _, d := range ds {
		if _, ok := s.held[d]; !ok {
			rest = append(rest, d)
		}
	}
	out, err := blob.GetMany(ctx, s.Store, rest)
	if err != nil || len(rest) == len(ds) {
		return out, err
	}
	if out == nil {
		out = map[content.Digest][]byte{}
	}
	for _, d := range ds {
		if i, ok := s.held[d]; ok {
			out[d] = slices.Clone(s.pending[i])
		}
	}
	return out, nil
}

func (s *staged) Missing(ctx context.Context, ds []content.Digest) ([]content.Digest, error) {
	missing, err := s.Store.Missing(ctx, ds)
	return s.unheld(missing), err
}

func (s *staged) Touch(ctx context.Context, ds []content.Digest) ([]content.Digest, error) {
	missing, err := s.Store.Touch(ctx, ds)
	return s.unheld(missing), err
}

// unheld drops the digests waiting to be written from ds.
func (s *staged) unheld(ds []content.Digest) []content.Digest {
	return slices.DeleteFunc(ds, func(d content.Digest) bool { _, ok := s.held[d]; return ok })
}

// PutEdges writes the waiting blobs and this edge together. A store that
// holds its writes keeps the edge with them instead, once the blobs it
// names are waiting, rooted or stored: a blob collected since is reported
// missing now, as a write would, so the caller can store something else.
func (s *staged) PutEdges(ctx context.Context, parent content.Digest, children []content.Digest) error {
	e := store.Edge{Parent: parent, Children: children}
	if !s.hold {
		return s.Flush(ctx, e)
	}
	var check []content.Digest
	for _, d := range append([]content.Digest{parent}, children...) {
		if _, ok := s.held[d]; !ok && d != s.rooted {
			check = append(check, d)
		}
	}
	if len(check) > 0 {
		missing, err := s.Store.Missing(ctx, check)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			return &blob.MissingError{Digests: missing}
		}
	}
	s.edges = append(s.edges, e)
	return nil
}

// Held returns the waiting blobs and edges as one batch, and forgets them.
func (s *staged) Held() store.Batch {
	b := store.Batch{Blobs: s.pending, Edges: s.edges}
	s.pending, s.held, s.edges = nil, map[content.Digest]int{}, nil
	return b
}

// Flush writes the waiting blobs and edges as one batch. On failure the
// blobs keep waiting (an edge to a collected blob fails the batch, and
// the caller then stores something else), so a later Flush retries them.
func (s *staged) Flush(ctx context.Context, edges ...store.Edge) error {
	if len(s.pending) == 0 && len(edges) == 0 {
		return nil
	}
	if err := store.WriteBatch(ctx, s.Store, s.Files, store.Batch{Blobs: s.pending, Edges: edges}); err != nil {
		return err
	}
	blob.Warm(s.Store, s.pending)
	s.pending, s.held = nil, map[content.Digest]int{}
	return nil
}
