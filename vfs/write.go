package vfs

import (
	"context"
	"fmt"
	"slices"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
)

// Edges records retention edges. It matches store.Edges' PutEdges, so any
// store backend satisfies it.
type Edges interface {
	PutEdges(ctx context.Context, parent content.Digest, children []content.Digest) error
}

// FileDigests returns the distinct file digests of m, sorted: exactly the
// retention children of its manifest blob.
func FileDigests(m Manifest) []content.Digest {
	ds := make([]content.Digest, 0, len(m.Files))
	for _, e := range m.Files {
		ds = append(ds, e.Ref.Digest)
	}
	content.SortDigests(ds)
	return slices.Compact(ds)
}

// WriteManifest stores m's canonical bytes as a blob of MediaType and records
// manifest → file edges for every file blob it names. The file blobs must
// already be stored (the edge store refuses missing children).
func WriteManifest(ctx context.Context, blobs blob.Store, edges Edges, m Manifest) (content.ContentRef, error) {
	data, err := MarshalManifest(m)
	if err != nil {
		return content.ContentRef{}, err
	}
	ref, err := blob.PutRef(ctx, blobs, data, MediaType, "")
	if err != nil {
		return content.ContentRef{}, fmt.Errorf("vfs: store manifest: %w", err)
	}
	if kids := FileDigests(m); len(kids) > 0 {
		if err := edges.PutEdges(ctx, ref.Digest, kids); err != nil {
			return content.ContentRef{}, fmt.Errorf("vfs: record edges of manifest %s: %w", ref.Digest, err)
		}
	}
	return ref, nil
}

// ReadManifest loads and parses the manifest stored under d.
func ReadManifest(ctx context.Context, blobs blob.Store, d content.Digest) (Manifest, error) {
	data, err := blobs.Get(ctx, d)
	if err != nil {
		return Manifest{}, fmt.Errorf("vfs: read manifest %s: %w", d, err)
	}
	m, err := ParseManifest(data)
	if err != nil {
		return Manifest{}, fmt.Errorf("vfs: manifest %s: %w", d, err)
	}
	return m, nil
}
