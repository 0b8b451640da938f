package store

import (
	"context"
	"fmt"
	"sort"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
)

// requireBlob fails with a *blob.MissingError unless d is in the blob store.
// Callers hold m.mu so the check and their write are one step.
func (m *Memory) requireBlob(ctx context.Context, what string, d content.Digest) error {
	missing, err := m.blobs.Missing(ctx, []content.Digest{d})
	if err != nil {
		return fmt.Errorf("%s: check blob: %w", what, err)
	}
	if len(missing) > 0 {
		return &blob.MissingError{Digests: missing}
	}
	return nil
}

// CreateWorkspace implements Workspaces.
func (m *Memory) CreateWorkspace(ctx context.Context, name string, head content.Digest) (Workspace, error) {
	if err := PrepareWorkspace(name, head); err != nil {
		return Workspace{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.workspaces[name]; ok {
		return Workspace{}, fmt.Errorf("%w: %s", ErrWorkspaceExists, name)
	}
	if err := m.requireBlob(ctx, "create workspace "+name, head); err != nil {
		return Workspace{}, err
	}
	now := m.now().UnixMilli()
	w := Workspace{Name: name, Revision: 1, Head: head, CreatedAtMs: now, UpdatedAtMs: now}
	m.workspaces[name] = w
	return w, nil
}

// Workspace implements Workspaces.
func (m *Memory) Workspace(ctx context.Context, name string) (Workspace, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	w, ok := m.workspaces[name]
	if !ok {
		return Workspace{}, fmt.Errorf("%w: %s", ErrWorkspaceNotFound, name)
	}
	return w, nil
}

// Workspaces implements Workspaces.
func (m *Memory) Workspaces(ctx context.Context, afterName string, limit int) ([]Workspace, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := []Workspace{}
	for name, w := range m.workspaces {
		if name > afterName {
			out = append(out, w)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// MoveHead implements Workspaces.
func (m *Memory) MoveHead(ctx context.Context, name string, expectedRevision int64, head content.Digest) (Workspace, error) {
	if err := PrepareWorkspace(name, head); err != nil {
		return Workspace{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.workspaces[name]
	if !ok {
		return Workspace{}, fmt.Errorf("%w: %s", ErrWorkspaceNotFound, name)
	}
	if w.Revision != expectedRevision {
		return Workspace{}, &WorkspaceConflictError{Name: name, Expected: expectedRevision, Actual: w.Revision}
	}
	if err := m.requireBlob(ctx, "move workspace "+name, head); err != nil {
		return Workspace{}, err
	}
	w.Revision++
	w.Head = head
	w.UpdatedAtMs = m.now().UnixMilli()
	m.workspaces[name] = w
	return w, nil
}

// PutSnapshot implements Workspaces.
func (m *Memory) PutSnapshot(ctx context.Context, manifest content.Digest) (Snapshot, error) {
	if err := PrepareSnapshot(manifest); err != nil {
		return Snapshot{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.snapshots[manifest]; ok {
		return s, nil
	}
	if err := m.requireBlob(ctx, "put snapshot "+manifest.String(), manifest); err != nil {
		return Snapshot{}, err
	}
	s := Snapshot{Manifest: manifest, CreatedAtMs: m.now().UnixMilli()}
	m.snapshots[manifest] = s
	return s, nil
}

// Snapshot implements Workspaces.
func (m *Memory) Snapshot(ctx context.Context, manifest content.Digest) (Snapshot, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, ok := m.snapshots[manifest]
	if !ok {
		return Snapshot{}, fmt.Errorf("%w: %s", ErrSnapshotNotFound, manifest)
	}
	return s, nil
}
