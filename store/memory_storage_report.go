package store

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

var _ StorageReporter = (*Memory)(nil)

// catalogEntries returns the memory blob store's entries by digest; the
// memory store keeps every body in process, so nothing is an object.
func (m *Memory) catalogEntries(ctx context.Context) (map[content.Digest]blob.MemoryEntry, error) {
	mb, ok := m.blobs.(*blob.Memory)
	if !ok {
		return nil, errNoMemoryCatalog
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := map[content.Digest]blob.MemoryEntry{}
	for _, e := range mb.Entries() {
		out[e.Digest] = e
	}
	return out, nil
}

// UniverseUsage implements StorageReporter.
func (m *Memory) UniverseUsage(ctx context.Context) (UniverseUsage, error) {
	entries, err := m.catalogEntries(ctx)
	if err != nil {
		return UniverseUsage{}, err
	}
	var u UniverseUsage
	for _, e := range entries {
		u.Blobs++
		u.PhysicalBytes += e.Size
	}
	u.InlineBlobs, u.InlineBytes = u.Blobs, u.PhysicalBytes
	m.mu.RLock()
	defer m.mu.RUnlock()
	u.Sessions = int64(len(m.sessions))
	for _, s := range m.sessions {
		for d := range s.roots {
			u.Roots++
			u.LogicalBytes += entries[d].Size
		}
	}
	var all []content.Digest
	for _, cps := range m.checkpoints {
		u.Checkpoints += int64(len(cps))
		all = slices.AppendSeq(all, maps.Values(cps))
	}
	u.CheckpointBytes = m.reachableBytesLocked(all, entries)
	for _, s := range m.sessions {
		n, bytes := eventUsage(s.events)
		u.Events += n
		u.EventBytes += bytes
	}
	return u, nil
}

// eventUsage counts events and the bytes of their payloads and joins.
func eventUsage(evs []core.Event) (n, bytes int64) {
	for _, ev := range evs {
		bytes += int64(len(ev.Payload))
		for _, j := range ev.Joins {
			bytes += int64(len(j))
		}
	}
	return int64(len(evs)), bytes
}

// SessionUsage implements StorageReporter.
func (m *Memory) SessionUsage(ctx context.Context, afterID string, limit int) ([]SessionUsage, error) {
	entries, err := m.catalogEntries(ctx)
	if err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var ids []string
	for id := range m.sessions {
		if id > afterID {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	rooted := m.rootCountsLocked()
	out := make([]SessionUsage, len(ids))
	for i, id := range ids {
		out[i] = m.sessionUsageLocked(id, entries, rooted)
	}
	return out, nil
}

// SessionUsageOf implements StorageReporter.
func (m *Memory) SessionUsageOf(ctx context.Context, sessionID string) (SessionUsage, error) {
	entries, err := m.catalogEntries(ctx)
	if err != nil {
		return SessionUsage{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if _, ok := m.sessions[sessionID]; !ok {
		return SessionUsage{}, fmt.Errorf("%w: %s", ErrSessionNotFound, sessionID)
	}
	return m.sessionUsageLocked(sessionID, entries, m.rootCountsLocked()), nil
}

// rootCountsLocked counts the sessions rooting each digest; the caller
// holds m.mu.
func (m *Memory) rootCountsLocked() map[content.Digest]int {
	out := map[content.Digest]int{}
	for _, s := range m.sessions {
		for d := range s.roots {
			out[d]++
		}
	}
	return out
}

func (m *Memory) sessionUsageLocked(id string, entries map[content.Digest]blob.MemoryEntry, rooted map[content.Digest]int) SessionUsage {
	u := SessionUsage{SessionID: id}
	for d := range m.sessions[id].roots {
		size := entries[d].Size
		u.Roots++
		u.LogicalBytes += size
		if rooted[d] > 1 {
			u.SharedRoots++
			u.SharedBytes += size
		}
	}
	u.Checkpoints = int64(len(m.checkpoints[id]))
	u.CheckpointBytes = m.reachableBytesLocked(slices.Collect(maps.Values(m.checkpoints[id])), entries)
	u.Events, u.EventBytes = eventUsage(m.sessions[id].events)
	return u
}

// BlobHolders implements StorageReporter.
func (m *Memory) BlobHolders(ctx context.Context, d content.Digest, limit int) (BlobHolders, error) {
	entries, err := m.catalogEntries(ctx)
	if err != nil {
		return BlobHolders{}, err
	}
	e, ok := entries[d]
	if !ok {
		return BlobHolders{}, &blob.NotFoundError{Digest: d}
	}
	h := BlobHolders{Digest: d, Size: e.Size, TouchedAt: e.TouchedAt}
	m.mu.RLock()
	defer m.mu.RUnlock()
	for id, s := range m.sessions {
		if _, ok := s.roots[d]; ok {
			h.Sessions = append(h.Sessions, id)
		}
	}
	slices.Sort(h.Sessions)
	h.Sessions, h.SessionsTruncated = CutHolders(h.Sessions, limit)
	for id, cps := range m.checkpoints {
		for seq, c := range cps {
			if c == d {
				h.Checkpoints = append(h.Checkpoints, CheckpointHolder{SessionID: id, Seq: seq})
			}
		}
	}
	slices.SortFunc(h.Checkpoints, func(a, b CheckpointHolder) int {
		if c := strings.Compare(a.SessionID, b.SessionID); c != 0 {
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	h.Checkpoints, h.CheckpointsTruncated = CutHolders(h.Checkpoints, limit)
	_, h.Snapshot = m.snapshots[d]
	for name, w := range m.workspaces {
		if w.Head == d {
			h.Workspaces = append(h.Workspaces, name)
		}
	}
	slices.Sort(h.Workspaces)
	h.Workspaces, h.WorkspacesTruncated = CutHolders(h.Workspaces, limit)
	for parent, kids := range m.edges {
		if _, ok := kids[d]; ok {
			h.Parents = append(h.Parents, parent)
		}
	}
	content.SortDigests(h.Parents)
	h.Parents, h.ParentsTruncated = CutHolders(h.Parents, limit)
	return h, nil
}

// reachableBytesLocked totals the sizes of the distinct blobs reachable
// from roots through edges: a chunked checkpoint is its index, pages and
// chunks, and consecutive checkpoints share most of their chunks.
func (m *Memory) reachableBytesLocked(roots []content.Digest, entries map[content.Digest]blob.MemoryEntry) int64 {
	seen := map[content.Digest]bool{}
	var bytes int64
	for stack := slices.Clone(roots); len(stack) > 0; {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[d] {
			continue
		}
		seen[d] = true
		bytes += entries[d].Size
		for c := range m.edges[d] {
			stack = append(stack, c)
		}
	}
	return bytes
}
