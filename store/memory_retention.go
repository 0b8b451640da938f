package store

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
)

var _ Collectable = (*Memory)(nil)

// errNoMemoryCatalog is returned by the retention methods of a Memory whose
// blob store is not a *blob.Memory (the only one whose touch times it knows).
var errNoMemoryCatalog = errors.New("memory store: retention needs a *blob.Memory blob store")

// heldLocked reports whether a holder protects d; the caller holds m.mu.
func (m *Memory) heldLocked(d content.Digest) bool {
	for _, s := range m.sessions {
		if _, ok := s.roots[d]; ok {
			return true
		}
	}
	for _, cps := range m.checkpoints {
		for _, c := range cps {
			if c == d {
				return true
			}
		}
	}
	if _, ok := m.snapshots[d]; ok {
		return true
	}
	for _, w := range m.workspaces {
		if w.Head == d {
			return true
		}
	}
	for _, kids := range m.edges {
		if _, ok := kids[d]; ok {
			return true
		}
	}
	return false
}

// ScanBlobs implements Collectable.
func (m *Memory) ScanBlobs(ctx context.Context, after BlobCursor, cutoff time.Time, limit int) ([]CatalogRow, error) {
	mb, ok := m.blobs.(*blob.Memory)
	if !ok {
		return nil, errNoMemoryCatalog
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var rows []CatalogRow
	for _, e := range mb.Entries() {
		if e.TouchedAt.Before(cutoff) && after.Before(e.TouchedAt, e.Digest) {
			rows = append(rows, CatalogRow{Digest: e.Digest, Size: e.Size, TouchedAt: e.TouchedAt})
		}
	}
	slices.SortFunc(rows, func(a, b CatalogRow) int {
		if c := a.TouchedAt.Compare(b.TouchedAt); c != 0 {
			return c
		}
		return bytes.Compare(a.Digest[:], b.Digest[:])
	})
	if limit > 0 && len(rows) > limit {
		rows = rows[:limit]
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	for i := range rows {
		rows[i].Held = m.heldLocked(rows[i].Digest)
	}
	return rows, nil
}

// DeleteDeadBlobs implements Collectable. Under the log's lock no append,
// checkpoint, workspace move or edge can record a holder, and the blob
// store's DeleteIf checks the touch time atomically with Put.
func (m *Memory) DeleteDeadBlobs(ctx context.Context, digests []content.Digest, cutoff time.Time) ([]DeletedBlob, error) {
	mb, ok := m.blobs.(*blob.Memory)
	if !ok {
		return nil, errNoMemoryCatalog
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []DeletedBlob
	for _, d := range digests {
		if m.heldLocked(d) {
			continue
		}
		size, ok := mb.DeleteIf(d, func(t time.Time) bool { return t.Before(cutoff) })
		if !ok {
			continue
		}
		delete(m.edges, d) // a deleted parent releases its children
		out = append(out, DeletedBlob{Digest: d, Size: size})
	}
	return out, nil
}

// DeleteObject implements Collectable; memory bodies are never objects.
func (m *Memory) DeleteObject(context.Context, string) error { return nil }

// LoadBlobCursor implements Collectable.
func (m *Memory) LoadBlobCursor(ctx context.Context) (BlobCursor, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.blobCursor, nil
}

// SaveBlobCursor implements Collectable.
func (m *Memory) SaveBlobCursor(ctx context.Context, c BlobCursor) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.blobCursor = c
	return nil
}
