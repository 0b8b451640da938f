package assembly

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/vfs"
)

// edgeRecorder is a fake vfs.Edges that checks what a real edge store would:
// children sorted, distinct and already stored.
type edgeRecorder struct {
	t     *testing.T
	blobs blob.Store
	mu    sync.Mutex
	edges map[content.Digest][]content.Digest
}

func newEdges(t *testing.T, blobs blob.Store) *edgeRecorder {
	return &edgeRecorder{t: t, blobs: blobs, edges: map[content.Digest][]content.Digest{}}
}

func (r *edgeRecorder) PutEdges(ctx context.Context, parent content.Digest, children []content.Digest) error {
	sorted := slices.Clone(children)
	content.SortDigests(sorted)
	if !slices.Equal(sorted, children) || len(slices.Compact(sorted)) != len(children) {
		r.t.Errorf("PutEdges(%s): children not sorted and distinct: %v", parent, children)
	}
	missing, err := r.blobs.Missing(ctx, append([]content.Digest{parent}, children...))
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		r.t.Errorf("PutEdges(%s): missing blobs %v", parent, missing)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.edges[parent] = append(r.edges[parent], children...)
	return nil
}

func (r *edgeRecorder) children(parent content.Digest) []content.Digest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.edges[parent]
}

// tree builds a Tree mounted at mount from manifest path → text.
func tree(t *testing.T, blobs blob.Store, mount string, files map[string]string) Tree {
	t.Helper()
	raw := make(map[string][]byte, len(files))
	for p, s := range files {
		raw[p] = []byte(s)
	}
	m, err := vfs.Build(context.Background(), blobs, raw, vfs.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return Tree{Mount: mount, Workspace: "ws", Snapshot: content.Sum([]byte(mount)), Manifest: m}
}

func get(t *testing.T, blobs blob.Store, ref content.ContentRef) string {
	t.Helper()
	data, err := blobs.Get(context.Background(), ref.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func digests(refs ...content.ContentRef) []content.Digest {
	var ds []content.Digest
	for _, r := range refs {
		ds = append(ds, r.Digest)
	}
	content.SortDigests(ds)
	return slices.Compact(ds)
}

// wantEdgesAreItsRefs checks that the edges recorded from a stored document
// are exactly the refs its bytes contain: none missing (the collector would
// lose what the document names) and none extra (it would keep bytes the
// document no longer names).
func wantEdgesAreItsRefs(t *testing.T, blobs blob.Store, edges *edgeRecorder, doc content.ContentRef) {
	t.Helper()
	data, err := blobs.Get(context.Background(), doc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	want, err := content.ExtractRefs(data)
	if err != nil {
		t.Fatalf("document %s: %v", doc.MediaType, err)
	}
	if got := edges.children(doc.Digest); !slices.Equal(got, want) || len(want) == 0 {
		t.Fatalf("%s edges = %v, want the refs of its bytes %v", doc.MediaType, got, want)
	}
}
