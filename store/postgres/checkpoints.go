package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

var _ store.Checkpoints = (*Store)(nil)

// PutCheckpoint implements store.Checkpoints. The blob's catalog row is
// key-share locked until the checkpoint row that references it commits, so
// a concurrent collector cannot delete it in between; afterwards the
// foreign key holds it. The session's head only grows, so checking seq
// against it needs no lock.
func (s *Store) PutCheckpoint(ctx context.Context, sessionID string, seq int64, blob content.Digest) error {
	if err := store.PrepareCheckpoint(sessionID, seq, blob); err != nil {
		return err
	}
	what := fmt.Sprintf("put checkpoint %s@%d", sessionID, seq)
	return inTx(ctx, s.pool, func(tx pgx.Tx) error {
		var head int64
		err := tx.QueryRow(ctx, `SELECT head FROM sessions WHERE universe = $1 AND session_id = $2`,
			s.universe, sessionID).Scan(&head)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", store.ErrSessionNotFound, sessionID)
		}
		if err != nil {
			return fmt.Errorf("postgres: %s: %w", what, err)
		}
		if seq > head {
			return store.CheckpointPastHead(sessionID, seq, head)
		}
		if err := s.lockBlob(ctx, tx, blob); err != nil {
			return wrapUnlessMissing(what, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO checkpoints (universe, session_id, seq, digest, created_at_ms)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (universe, session_id, seq) DO UPDATE SET digest = excluded.digest, created_at_ms = excluded.created_at_ms`,
			s.universe, sessionID, seq, blob[:], s.now().UnixMilli()); err != nil {
			return fmt.Errorf("postgres: %s: %w", what, err)
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
	var raw []byte
	err := s.pool.QueryRow(ctx, `SELECT seq, digest FROM checkpoints
		WHERE universe = $1 AND session_id = $2 AND seq <= $3 ORDER BY seq DESC LIMIT 1`,
		s.universe, sessionID, bound).Scan(&seq, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, content.Digest{}, fmt.Errorf("%w: session %s at or below %d", store.ErrCheckpointNotFound, sessionID, atOrBelow)
	}
	if err != nil {
		return 0, content.Digest{}, fmt.Errorf("postgres: latest checkpoint of %s: %w", sessionID, err)
	}
	var d content.Digest
	if len(raw) != len(d) {
		return 0, content.Digest{}, fmt.Errorf("postgres: stored checkpoint %s@%d has a %d-byte digest", sessionID, seq, len(raw))
	}
	return seq, content.Digest(raw), nil
}

// PruneCheckpoints implements store.Checkpoints.
func (s *Store) PruneCheckpoints(ctx context.Context, sessionID string, below int64) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM checkpoints WHERE universe = $1 AND session_id = $2 AND seq < $3`,
		s.universe, sessionID, below)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune checkpoints of %s: %w", sessionID, err)
	}
	return int(tag.RowsAffected()), nil
}
