package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

var _ store.Catalog = (*Store)(nil)

// Fork implements store.Catalog: one row, no event read or written. The
// source's row is key-share locked while the fork is inserted, so a
// concurrent deletion of the source either sees the fork or, having gone
// first, leaves this one finding no source.
func (s *Store) Fork(ctx context.Context, req store.ForkRequest) (core.Lifecycle, error) {
	if err := store.PrepareFork(req); err != nil {
		return core.Lifecycle{}, err
	}
	life := store.ForkProjection(req)
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error { return s.forkIn(ctx, tx, req, life) })
	if err != nil {
		return core.Lifecycle{}, err
	}
	return life, nil
}

// forkIn inserts the fork's row, with life as its projection, in tx.
func (s *Store) forkIn(ctx context.Context, tx pgx.Tx, req store.ForkRequest, life core.Lifecycle) error {
	var src store.Layout
	var head int64
	var segs []byte
	err := tx.QueryRow(ctx, `SELECT head, fork_at, fork_depth, fork_segments FROM sessions
		WHERE universe = $1 AND session_id = $2 FOR KEY SHARE`, s.universe, req.Source).Scan(&head, &src.ForkAt, &src.Depth, &segs)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %s", store.ErrSessionNotFound, req.Source)
	}
	if err != nil {
		return fmt.Errorf("postgres: fork %s: %w", req.SessionID, err)
	}
	if segs != nil {
		if err := json.Unmarshal(segs, &src.Inherited); err != nil {
			return fmt.Errorf("postgres: fork %s: decode the source's segments: %w", req.SessionID, err)
		}
	}
	if req.AtSeq > head {
		return store.ForkPointPastHead(req.Source, req.AtSeq, head)
	}
	if err := store.CheckForkDepth(req.Source, src); err != nil {
		return err
	}
	lay := store.ForkLayout(req.Source, src, req.AtSeq)
	rawSegs, err := json.Marshal(lay.Inherited)
	if err != nil {
		return fmt.Errorf("postgres: fork %s: encode segments: %w", req.SessionID, err)
	}
	raw, err := json.Marshal(life)
	if err != nil {
		return fmt.Errorf("postgres: fork %s: encode lifecycle: %w", req.SessionID, err)
	}
	tag, err := tx.Exec(ctx, `INSERT INTO sessions
		(universe, session_id, head, status, has_unfinished, created_at_ms, updated_at_ms, lifecycle,
		 fork_source, fork_at, fork_depth, fork_segments)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (universe, session_id) DO NOTHING`,
		s.universe, req.SessionID, life.Head, life.Status, life.Unfinished(), life.CreatedAtMs, life.UpdatedAtMs, raw,
		req.Source, lay.ForkAt, lay.Depth, rawSegs)
	if err != nil {
		return fmt.Errorf("postgres: fork %s: %w", req.SessionID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", store.ErrSessionExists, req.SessionID)
	}
	return nil
}

// RecordClone implements store.Catalog.
func (s *Store) RecordClone(ctx context.Context, sessionID, sourceID string) error {
	return inTx(ctx, s.pool, func(tx pgx.Tx) error { return s.cloneIn(ctx, tx, sessionID, sourceID) })
}

// cloneIn records the clone's lineage in tx.
func (s *Store) cloneIn(ctx context.Context, tx pgx.Tx, sessionID, sourceID string) error {
	existing, err := s.sourceIn(ctx, tx, sessionID, " FOR UPDATE")
	if err != nil {
		return err
	}
	var one int
	err = tx.QueryRow(ctx, `SELECT 1 FROM sessions WHERE universe = $1 AND session_id = $2`, s.universe, sourceID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %s", store.ErrSessionNotFound, sourceID)
	}
	if err != nil {
		return fmt.Errorf("postgres: record clone %s: %w", sessionID, err)
	}
	if sessionID == sourceID {
		return fmt.Errorf("%w: session %s cannot be a clone of itself", store.ErrInvalidFork, sessionID)
	}
	if existing != nil {
		return fmt.Errorf("%w: session %s already has lineage (from %s)", store.ErrInvalidFork, sessionID, existing.SessionID)
	}
	if _, err := tx.Exec(ctx, `UPDATE sessions SET clone_source = $3 WHERE universe = $1 AND session_id = $2`,
		s.universe, sessionID, sourceID); err != nil {
		return fmt.Errorf("postgres: record clone %s: %w", sessionID, err)
	}
	return nil
}

// Source implements store.Catalog.
func (s *Store) Source(ctx context.Context, sessionID string) (*store.Source, error) {
	return s.sourceIn(ctx, s.pool, sessionID, "")
}

type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (s *Store) sourceIn(ctx context.Context, q rowQuerier, sessionID, lock string) (*store.Source, error) {
	var fork, clone *string
	var at int64
	err := q.QueryRow(ctx, `SELECT fork_source, fork_at, clone_source FROM sessions WHERE universe = $1 AND session_id = $2`+lock,
		s.universe, sessionID).Scan(&fork, &at, &clone)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("%w: %s", store.ErrSessionNotFound, sessionID)
	case err != nil:
		return nil, fmt.Errorf("postgres: lineage of %s: %w", sessionID, err)
	case fork != nil:
		return &store.Source{SessionID: *fork, AtSeq: at}, nil
	case clone != nil:
		return &store.Source{SessionID: *clone}, nil
	}
	return nil, nil
}

// DeleteSession implements store.Catalog. Every member's row is locked
// before its forks are listed, so a fork created concurrently either
// commits first and is found, or waits and then finds no source; appends
// to a member wait too. One DELETE of the catalog rows takes the events,
// roots and checkpoints with them (ON DELETE CASCADE) and releases the
// checkpoints' and roots' blobs, which stay for the collector.
func (s *Store) DeleteSession(ctx context.Context, sessionID string, cascade bool) ([]string, error) {
	var tree []string
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		tree, err = store.DeletionTree(sessionID, cascade, func(id string) (string, []string, error) {
			var status string
			err := tx.QueryRow(ctx, `SELECT status FROM sessions WHERE universe = $1 AND session_id = $2 FOR UPDATE`,
				s.universe, id).Scan(&status)
			if errors.Is(err, pgx.ErrNoRows) {
				return "", nil, fmt.Errorf("%w: %s", store.ErrSessionNotFound, id)
			}
			if err != nil {
				return "", nil, fmt.Errorf("postgres: delete %s: %w", id, err)
			}
			rows, err := tx.Query(ctx, `SELECT session_id FROM sessions WHERE universe = $1 AND fork_source = $2`, s.universe, id)
			if err != nil {
				return "", nil, fmt.Errorf("postgres: delete %s: forks: %w", id, err)
			}
			forks, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return "", nil, fmt.Errorf("postgres: delete %s: forks: %w", id, err)
			}
			return status, forks, nil
		})
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE universe = $1 AND session_id = ANY ($2::text[])`,
			s.universe, tree); err != nil {
			return fmt.Errorf("postgres: delete %s: %w", sessionID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tree, nil
}

// SessionsBefore implements store.Catalog.
func (s *Store) SessionsBefore(ctx context.Context, before *store.SessionCursor, limit int) ([]core.Lifecycle, error) {
	var lim *int64
	if limit > 0 {
		l := int64(limit)
		lim = &l
	}
	where, args := ``, []any{s.universe, lim}
	if before != nil {
		where, args = ` AND (created_at_ms, session_id) < ($3, $4)`, append(args, before.CreatedAtMs, before.SessionID)
	}
	rows, err := s.pool.Query(ctx, `SELECT lifecycle FROM sessions WHERE universe = $1`+where+`
		ORDER BY created_at_ms DESC, session_id DESC LIMIT $2`, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list sessions: %w", err)
	}
	return collectLifecycles(rows)
}
