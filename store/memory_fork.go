package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// Fork implements Catalog.
func (m *Memory) Fork(ctx context.Context, req ForkRequest) (core.Lifecycle, error) {
	if err := PrepareFork(req); err != nil {
		return core.Lifecycle{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[req.SessionID]; ok {
		return core.Lifecycle{}, fmt.Errorf("%w: %s", ErrSessionExists, req.SessionID)
	}
	src, ok := m.sessions[req.Source]
	if !ok {
		return core.Lifecycle{}, fmt.Errorf("%w: %s", ErrSessionNotFound, req.Source)
	}
	if req.AtSeq > src.lifecycle.Head {
		return core.Lifecycle{}, ForkPointPastHead(req.Source, req.AtSeq, src.lifecycle.Head)
	}
	if err := CheckForkDepth(req.Source, src.layout); err != nil {
		return core.Lifecycle{}, err
	}
	life := ForkProjection(req)
	m.sessions[req.SessionID] = &memSession{
		layout:    ForkLayout(req.Source, src.layout, req.AtSeq),
		source:    &Source{SessionID: req.Source, AtSeq: req.AtSeq},
		lifecycle: life,
		roots:     map[content.Digest]struct{}{},
	}
	return life, nil
}

// RecordClone implements Catalog.
func (m *Memory) RecordClone(ctx context.Context, sessionID, sourceID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[sessionID]
	if !ok {
		return fmt.Errorf("%w: %s", ErrSessionNotFound, sessionID)
	}
	if _, ok := m.sessions[sourceID]; !ok {
		return fmt.Errorf("%w: %s", ErrSessionNotFound, sourceID)
	}
	if err := checkClone(sessionID, sourceID, s.source); err != nil {
		return err
	}
	s.source = &Source{SessionID: sourceID}
	return nil
}

// checkClone refuses to record a clone of itself or over existing lineage.
func checkClone(sessionID, sourceID string, existing *Source) error {
	if sessionID == sourceID {
		return fmt.Errorf("%w: session %s cannot be a clone of itself", ErrInvalidFork, sessionID)
	}
	if existing != nil {
		return fmt.Errorf("%w: session %s already has lineage (from %s)", ErrInvalidFork, sessionID, existing.SessionID)
	}
	return nil
}

// Source implements Catalog.
func (m *Memory) Source(ctx context.Context, sessionID string) (*Source, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, ok := m.sessions[sessionID]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrSessionNotFound, sessionID)
	}
	if s.source == nil {
		return nil, nil
	}
	src := *s.source
	return &src, nil
}

// DeleteSession implements Catalog.
func (m *Memory) DeleteSession(ctx context.Context, sessionID string, cascade bool) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[sessionID]; !ok {
		return nil, fmt.Errorf("%w: %s", ErrSessionNotFound, sessionID)
	}
	tree, err := DeletionTree(sessionID, cascade, func(id string) (string, []string, error) {
		var forks []string
		for fid, s := range m.sessions {
			if s.source != nil && s.source.AtSeq > 0 && s.source.SessionID == id {
				forks = append(forks, fid)
			}
		}
		return m.sessions[id].lifecycle.Status, forks, nil
	})
	if err != nil {
		return nil, err
	}
	for _, id := range tree {
		delete(m.sessions, id)
		delete(m.checkpoints, id)
	}
	return tree, nil
}

// DeletionTree returns the sessions a deletion of sessionID removes, the
// requested one first and every fork after its source, or why it may not:
// with cascade, sessionID and every history fork below it; without, just
// sessionID, which must then have no history forks. Every member must be
// closed. node returns a session's status and its direct history forks.
func DeletionTree(sessionID string, cascade bool, node func(id string) (status string, forks []string, err error)) ([]string, error) {
	tree := []string{sessionID}
	for i := 0; i < len(tree); i++ {
		id := tree[i]
		status, forks, err := node(id)
		if err != nil {
			return nil, err
		}
		if status != core.SessionStatusClosed {
			return nil, &NotClosedError{SessionID: id, Status: status}
		}
		slices.Sort(forks)
		if len(forks) > 0 && !cascade {
			return nil, &HasForksError{SessionID: id, Forks: forks}
		}
		tree = append(tree, forks...)
	}
	return tree, nil
}

// SessionsBefore implements Catalog.
func (m *Memory) SessionsBefore(ctx context.Context, before *SessionCursor, limit int) ([]core.Lifecycle, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []core.Lifecycle
	for _, s := range m.sessions {
		if before == nil || before.Before(s.lifecycle) {
			out = append(out, s.lifecycle)
		}
	}
	slices.SortFunc(out, NewestFirst)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
