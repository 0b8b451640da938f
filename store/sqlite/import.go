package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

var _ store.Importer = (*Store)(nil)

// Import implements store.Importer in one write transaction.
func (s *Store) Import(ctx context.Context, b store.ImportBatch) error {
	now := s.nowMs()
	workspaces, err := store.PrepareImportBatch(b, now)
	if err != nil {
		return err
	}
	return s.writeTx(ctx, func(tx stmtTx) error {
		for _, d := range b.Snapshots {
			if err := s.putSnapshotIn(ctx, tx, &store.Snapshot{Manifest: d, CreatedAtMs: now}); err != nil {
				return err
			}
		}
		for _, w := range workspaces {
			if err := s.createWorkspaceIn(ctx, tx, w); err != nil {
				return err
			}
		}
		for _, is := range b.Sessions {
			if err := s.importIn(ctx, tx, is); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) importIn(ctx context.Context, tx stmtTx, is store.ImportedSession) error {
	if err := store.PrepareImport(is); err != nil {
		return err
	}
	if is.Fork != nil {
		if err := s.forkIn(ctx, tx, *is.Fork, store.ForkProjection(*is.Fork)); err != nil {
			return err
		}
	} else {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE universe = ? AND session_id = ?`, s.universe, is.SessionID).Scan(&one)
		if err == nil {
			return fmt.Errorf("%w: %s", store.ErrSessionExists, is.SessionID)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: import %s: %w", is.SessionID, err)
		}
		// The row first, for the events' foreign key; its projection last.
		if err := upsertSession(ctx, tx, s.universe, core.Lifecycle{SessionID: is.SessionID}); err != nil {
			return fmt.Errorf("sqlite: import %s: %w", is.SessionID, err)
		}
	}
	_, life, err := store.ImportedEvents(is, func(events []core.Event, refs []content.Digest) error {
		if len(refs) > 0 {
			refsJSON, err := digestsJSON(refs)
			if err != nil {
				return err
			}
			missing, err := missingIn(ctx, tx, s.universe, refsJSON)
			if err != nil {
				return fmt.Errorf("sqlite: import %s: check refs: %w", is.SessionID, err)
			}
			if len(missing) > 0 {
				return &blob.MissingError{Digests: missing}
			}
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO session_roots (universe, session_id, digest)
				SELECT ?, ?, value FROM json_each(?)`, s.universe, is.SessionID, refsJSON); err != nil {
				return fmt.Errorf("sqlite: import %s: record roots: %w", is.SessionID, err)
			}
		}
		if err := insertEvents(ctx, tx, s.universe, is.SessionID, events); err != nil {
			return fmt.Errorf("sqlite: import %s: %w", is.SessionID, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := upsertSession(ctx, tx, s.universe, life); err != nil {
		return fmt.Errorf("sqlite: import %s: %w", is.SessionID, err)
	}
	// The upsert keeps a row's creation time, and the row written first
	// had none.
	if _, err := tx.ExecContext(ctx, `UPDATE sessions SET created_at_ms = ? WHERE universe = ? AND session_id = ?`,
		life.CreatedAtMs, s.universe, is.SessionID); err != nil {
		return fmt.Errorf("sqlite: import %s: %w", is.SessionID, err)
	}
	if is.CloneOf != "" {
		return s.cloneIn(ctx, tx, is.SessionID, is.CloneOf)
	}
	return nil
}
