package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

var _ store.Checkpoints = (*Store)(nil)

// PutCheckpoint implements store.Checkpoints. The head check, the blob
// check and the write are one immediate transaction; the foreign key holds
// the blob afterwards.
func (s *Store) PutCheckpoint(ctx context.Context, sessionID string, seq int64, blob content.Digest) error {
	if err := store.PrepareCheckpoint(sessionID, seq, blob); err != nil {
		return err
	}
	what := fmt.Sprintf("put checkpoint %s@%d", sessionID, seq)
	return s.writeTx(ctx, func(tx stmtTx) error {
		var head int64
		err := tx.QueryRowContext(ctx, `SELECT head FROM sessions WHERE universe = ? AND session_id = ?`,
			s.universe, sessionID).Scan(&head)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %s", store.ErrSessionNotFound, sessionID)
		}
		if err != nil {
			return fmt.Errorf("sqlite: %s: %w", what, err)
		}
		if seq > head {
			return store.CheckpointPastHead(sessionID, seq, head)
		}
		if err := s.requireBlob(ctx, tx, blob); err != nil {
			return wrapUnlessMissing(what, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO checkpoints (universe, session_id, seq, digest, created_at_ms)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (universe, session_id, seq) DO UPDATE SET digest = excluded.digest, created_at_ms = excluded.created_at_ms`,
			s.universe, sessionID, seq, blob.String(), s.nowMs()); err != nil {
			return fmt.Errorf("sqlite: %s: %w", what, err)
		}
		return nil
	})
}

// LatestCheckpoint implements store.Checkpoints.
func (s *Store) LatestCheckpoint(ctx context.Context, sessionID string, atOrBelow int64) (int64, content.Digest, error) {
	bound := atOrBelow
	if bound <= 0 {
		bound = 1<<63 - 1
	}
	var seq int64
	var raw string
	err := s.reads.QueryRowContext(ctx, `SELECT seq, digest FROM checkpoints
		WHERE universe = ? AND session_id = ? AND seq <= ? ORDER BY seq DESC LIMIT 1`,
		s.universe, sessionID, bound).Scan(&seq, &raw)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, content.Digest{}, fmt.Errorf("%w: session %s at or below %d", store.ErrCheckpointNotFound, sessionID, atOrBelow)
	}
	if err != nil {
		return 0, content.Digest{}, fmt.Errorf("sqlite: latest checkpoint of %s: %w", sessionID, err)
	}
	d, err := content.ParseDigest(raw)
	if err != nil {
		return 0, content.Digest{}, fmt.Errorf("sqlite: stored checkpoint %s@%d: %w", sessionID, seq, err)
	}
	return seq, d, nil
}

// PruneCheckpoints implements store.Checkpoints.
func (s *Store) PruneCheckpoints(ctx context.Context, sessionID string, below int64) (int, error) {
	res, err := s.writes.ExecContext(ctx, `DELETE FROM checkpoints WHERE universe = ? AND session_id = ? AND seq < ?`,
		s.universe, sessionID, below)
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune checkpoints of %s: %w", sessionID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune checkpoints of %s: %w", sessionID, err)
	}
	return int(n), nil
}
