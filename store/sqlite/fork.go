package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

var _ store.Catalog = (*Store)(nil)

// querier is what layoutIn needs of the reader pool or a transaction.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// layout returns where the session's effective log is stored;
// store.ErrSessionNotFound for an unknown session.
func (s *Store) layout(ctx context.Context, sessionID string) (store.Layout, error) {
	lay, _, err := s.layoutIn(ctx, s.reads, sessionID)
	return lay, err
}

// layoutIn is layout through q, also returning the session's head.
func (s *Store) layoutIn(ctx context.Context, q querier, sessionID string) (store.Layout, int64, error) {
	var lay store.Layout
	var head int64
	var segs sql.NullString
	err := q.QueryRowContext(ctx, `SELECT head, fork_at, fork_depth, fork_segments FROM sessions
		WHERE universe = ? AND session_id = ?`, s.universe, sessionID).Scan(&head, &lay.ForkAt, &lay.Depth, &segs)
	if errors.Is(err, sql.ErrNoRows) {
		return lay, 0, fmt.Errorf("%w: %s", store.ErrSessionNotFound, sessionID)
	}
	if err != nil {
		return lay, 0, fmt.Errorf("sqlite: session %s: %w", sessionID, err)
	}
	if segs.Valid {
		if err := json.Unmarshal([]byte(segs.String), &lay.Inherited); err != nil {
			return lay, 0, fmt.Errorf("sqlite: session %s: decode fork segments: %w", sessionID, err)
		}
	}
	return lay, head, nil
}

// Fork implements store.Catalog: one row, no event read or written.
func (s *Store) Fork(ctx context.Context, req store.ForkRequest) (core.Lifecycle, error) {
	if err := store.PrepareFork(req); err != nil {
		return core.Lifecycle{}, err
	}
	life := store.ForkProjection(req)
	err := s.writeTx(ctx, func(tx stmtTx) error { return s.forkIn(ctx, tx, req, life) })
	if err != nil {
		return core.Lifecycle{}, err
	}
	return life, nil
}

// forkIn inserts the fork's row, with life as its projection, in tx.
func (s *Store) forkIn(ctx context.Context, tx stmtTx, req store.ForkRequest, life core.Lifecycle) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE universe = ? AND session_id = ?`,
		s.universe, req.SessionID).Scan(&one)
	if err == nil {
		return fmt.Errorf("%w: %s", store.ErrSessionExists, req.SessionID)
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: fork %s: %w", req.SessionID, err)
	}
	src, head, err := s.layoutIn(ctx, tx, req.Source)
	if err != nil {
		return err
	}
	if req.AtSeq > head {
		return store.ForkPointPastHead(req.Source, req.AtSeq, head)
	}
	if err := store.CheckForkDepth(req.Source, src); err != nil {
		return err
	}
	lay := store.ForkLayout(req.Source, src, req.AtSeq)
	segs, err := json.Marshal(lay.Inherited)
	if err != nil {
		return fmt.Errorf("sqlite: fork %s: encode segments: %w", req.SessionID, err)
	}
	raw, err := json.Marshal(life)
	if err != nil {
		return fmt.Errorf("sqlite: fork %s: encode lifecycle: %w", req.SessionID, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO sessions
		(universe, session_id, head, status, has_unfinished, created_at_ms, updated_at_ms, lifecycle,
		 fork_source, fork_at, fork_depth, fork_segments)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		s.universe, req.SessionID, life.Head, life.Status, life.Unfinished(), life.CreatedAtMs, life.UpdatedAtMs, string(raw),
		req.Source, lay.ForkAt, lay.Depth, string(segs)); err != nil {
		return fmt.Errorf("sqlite: fork %s: %w", req.SessionID, err)
	}
	return nil
}

// RecordClone implements store.Catalog.
func (s *Store) RecordClone(ctx context.Context, sessionID, sourceID string) error {
	return s.writeTx(ctx, func(tx stmtTx) error { return s.cloneIn(ctx, tx, sessionID, sourceID) })
}

// cloneIn records the clone's lineage in tx.
func (s *Store) cloneIn(ctx context.Context, tx stmtTx, sessionID, sourceID string) error {
	existing, err := sourceIn(ctx, tx, s.universe, sessionID)
	if err != nil {
		return err
	}
	var one int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE universe = ? AND session_id = ?`, s.universe, sourceID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %s", store.ErrSessionNotFound, sourceID)
	}
	if err != nil {
		return fmt.Errorf("sqlite: record clone %s: %w", sessionID, err)
	}
	if sessionID == sourceID {
		return fmt.Errorf("%w: session %s cannot be a clone of itself", store.ErrInvalidFork, sessionID)
	}
	if existing != nil {
		return fmt.Errorf("%w: session %s already has lineage (from %s)", store.ErrInvalidFork, sessionID, existing.SessionID)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE sessions SET clone_source = ? WHERE universe = ? AND session_id = ?`,
		sourceID, s.universe, sessionID); err != nil {
		return fmt.Errorf("sqlite: record clone %s: %w", sessionID, err)
	}
	return nil
}

// Source implements store.Catalog.
func (s *Store) Source(ctx context.Context, sessionID string) (*store.Source, error) {
	return sourceIn(ctx, s.reads, s.universe, sessionID)
}

func sourceIn(ctx context.Context, q querier, universe, sessionID string) (*store.Source, error) {
	var fork, clone sql.NullString
	var at int64
	err := q.QueryRowContext(ctx, `SELECT fork_source, fork_at, clone_source FROM sessions WHERE universe = ? AND session_id = ?`,
		universe, sessionID).Scan(&fork, &at, &clone)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("%w: %s", store.ErrSessionNotFound, sessionID)
	case err != nil:
		return nil, fmt.Errorf("sqlite: lineage of %s: %w", sessionID, err)
	case fork.Valid:
		return &store.Source{SessionID: fork.String, AtSeq: at}, nil
	case clone.Valid:
		return &store.Source{SessionID: clone.String}, nil
	}
	return nil, nil
}

// DeleteSession implements store.Catalog: the checks and every row of the
// sessions deleted (events, roots, checkpoints, the catalog row with its
// lineage) in one immediate transaction. Blob rows are not touched.
func (s *Store) DeleteSession(ctx context.Context, sessionID string, cascade bool) ([]string, error) {
	var tree []string
	err := s.writeTx(ctx, func(tx stmtTx) error {
		var err error
		tree, err = store.DeletionTree(sessionID, cascade, func(id string) (string, []string, error) {
			var status string
			err := tx.QueryRowContext(ctx, `SELECT status FROM sessions WHERE universe = ? AND session_id = ?`,
				s.universe, id).Scan(&status)
			if errors.Is(err, sql.ErrNoRows) {
				return "", nil, fmt.Errorf("%w: %s", store.ErrSessionNotFound, id)
			}
			if err != nil {
				return "", nil, fmt.Errorf("sqlite: delete %s: %w", id, err)
			}
			forks, err := txStrings(ctx, tx, `SELECT session_id FROM sessions WHERE universe = ? AND fork_source = ?`, s.universe, id)
			if err != nil {
				return "", nil, fmt.Errorf("sqlite: delete %s: forks: %w", id, err)
			}
			return status, forks, nil
		})
		if err != nil {
			return err
		}
		// Forks before their sources.
		for i := len(tree) - 1; i >= 0; i-- {
			for _, table := range []string{"checkpoints", "session_roots", "events", "sessions"} {
				if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE universe = ? AND session_id = ?`,
					s.universe, tree[i]); err != nil {
					return fmt.Errorf("sqlite: delete %s: %s: %w", tree[i], table, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tree, nil
}

func txStrings(ctx context.Context, tx stmtTx, query string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// SessionsBefore implements store.Catalog.
func (s *Store) SessionsBefore(ctx context.Context, before *store.SessionCursor, limit int) ([]core.Lifecycle, error) {
	if limit <= 0 {
		limit = -1
	}
	where, args := ``, []any{s.universe}
	if before != nil {
		where, args = ` AND (created_at_ms, session_id) < (?, ?)`, append(args, before.CreatedAtMs, before.SessionID)
	}
	rows, err := s.reads.QueryContext(ctx, `SELECT lifecycle FROM sessions WHERE universe = ?`+where+`
		ORDER BY created_at_ms DESC, session_id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list sessions: %w", err)
	}
	return scanLifecycles(rows)
}
