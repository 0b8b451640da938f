package store

import (
	"context"
	"fmt"

	"github.com/cairn-agents/cairn/content"
)

// PutCheckpoint implements Checkpoints.
func (m *Memory) PutCheckpoint(ctx context.Context, sessionID string, seq int64, blob content.Digest) error {
	if err := PrepareCheckpoint(sessionID, seq, blob); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[sessionID]
	if !ok {
		return fmt.Errorf("%w: %s", ErrSessionNotFound, sessionID)
	}
	if seq > s.lifecycle.Head {
		return CheckpointPastHead(sessionID, seq, s.lifecycle.Head)
	}
	if err := m.requireBlob(ctx, fmt.Sprintf("put checkpoint %s@%d", sessionID, seq), blob); err != nil {
		return err
	}
	cps := m.checkpoints[sessionID]
	if cps == nil {
		cps = map[int64]content.Digest{}
		m.checkpoints[sessionID] = cps
	}
	cps[seq] = blob
	return nil
}

// LatestCheckpoint implements Checkpoints.
func (m *Memory) LatestCheckpoint(ctx context.Context, sessionID string, atOrBelow int64) (int64, content.Digest, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var best int64
	var d content.Digest
	for seq, blob := range m.checkpoints[sessionID] {
		if seq > best && (atOrBelow <= 0 || seq <= atOrBelow) {
			best, d = seq, blob
		}
	}
	if best == 0 {
		return 0, content.Digest{}, fmt.Errorf("%w: session %s at or below %d", ErrCheckpointNotFound, sessionID, atOrBelow)
	}
	return best, d, nil
}

// PruneCheckpoints implements Checkpoints.
func (m *Memory) PruneCheckpoints(ctx context.Context, sessionID string, below int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for seq := range m.checkpoints[sessionID] {
		if seq < below {
			delete(m.checkpoints[sessionID], seq)
			n++
		}
	}
	return n, nil
}
