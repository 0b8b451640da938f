package store

import (
	"context"
	"fmt"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

var _ Importer = (*Memory)(nil)

// Import implements Importer: everything is built aside and added
// together once every part of it is whole.
func (m *Memory) Import(ctx context.Context, b ImportBatch) error {
	now := m.now().UnixMilli()
	prepared, err := PrepareImportBatch(b, now)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range b.Snapshots {
		if err := m.requireBlob(ctx, "put snapshot "+d.String(), d); err != nil {
			return err
		}
	}
	workspaces := map[string]Workspace{}
	for _, w := range prepared {
		if _, ok := m.workspaces[w.Name]; ok || workspaces[w.Name].Name != "" {
			return fmt.Errorf("%w: %s", ErrWorkspaceExists, w.Name)
		}
		if err := m.requireBlob(ctx, "create workspace "+w.Name, w.Head); err != nil {
			return err
		}
		workspaces[w.Name] = w
	}
	built := map[string]*memSession{}
	lookup := func(id string) *memSession {
		if s := built[id]; s != nil {
			return s
		}
		return m.sessions[id]
	}
	for _, is := range b.Sessions {
		if err := PrepareImport(is); err != nil {
			return err
		}
		if lookup(is.SessionID) != nil {
			return fmt.Errorf("%w: %s", ErrSessionExists, is.SessionID)
		}
		s := &memSession{roots: map[content.Digest]struct{}{}}
		if f := is.Fork; f != nil {
			src := lookup(f.Source)
			if src == nil {
				return fmt.Errorf("%w: %s", ErrSessionNotFound, f.Source)
			}
			if f.AtSeq > src.lifecycle.Head {
				return ForkPointPastHead(f.Source, f.AtSeq, src.lifecycle.Head)
			}
			if err := CheckForkDepth(f.Source, src.layout); err != nil {
				return err
			}
			s.layout, s.source = ForkLayout(f.Source, src.layout, f.AtSeq), &Source{SessionID: f.Source, AtSeq: f.AtSeq}
		}
		if is.CloneOf != "" {
			if lookup(is.CloneOf) == nil {
				return fmt.Errorf("%w: %s", ErrSessionNotFound, is.CloneOf)
			}
			s.source = &Source{SessionID: is.CloneOf}
		}
		_, life, err := ImportedEvents(is, func(events []core.Event, refs []content.Digest) error {
			missing, err := m.blobs.Missing(ctx, refs)
			if err != nil {
				return err
			}
			if len(missing) > 0 {
				return &blob.MissingError{Digests: missing}
			}
			for _, ev := range events {
				s.events = append(s.events, CloneEvent(ev))
			}
			for _, d := range refs {
				s.roots[d] = struct{}{}
			}
			return nil
		})
		if err != nil {
			return err
		}
		s.lifecycle = life
		built[is.SessionID] = s
	}
	for id, s := range built {
		m.sessions[id] = s
	}
	for name, w := range workspaces {
		m.workspaces[name] = w
	}
	for _, d := range b.Snapshots {
		if _, ok := m.snapshots[d]; !ok {
			m.snapshots[d] = Snapshot{Manifest: d, CreatedAtMs: now}
		}
	}
	return nil
}
