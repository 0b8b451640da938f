package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

var _ store.Importer = (*Store)(nil)

// Import implements store.Importer in one transaction.
func (s *Store) Import(ctx context.Context, b store.ImportBatch) error {
	now := s.now().UnixMilli()
	workspaces, err := store.PrepareImportBatch(b, now)
	if err != nil {
		return err
	}
	return inTx(ctx, s.pool, func(tx pgx.Tx) error {
		for _, d := range b.Snapshots {
			if err := s.putSnapshotIn(ctx, tx, &store.Snapshot{Manifest: d}, now); err != nil {
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

func (s *Store) importIn(ctx context.Context, tx pgx.Tx, is store.ImportedSession) error {
	if err := store.PrepareImport(is); err != nil {
		return err
	}
	if is.Fork != nil {
		if err := s.forkIn(ctx, tx, *is.Fork, store.ForkProjection(*is.Fork)); err != nil {
			return err
		}
	} else {
		// The row first, for the events' foreign key, and its projection
		// last; nothing outside this transaction sees the placeholder head.
		tag, err := tx.Exec(ctx, `INSERT INTO sessions
			(universe, session_id, head, status, has_unfinished, created_at_ms, updated_at_ms, lifecycle)
			VALUES ($1, $2, 1, '', false, 0, 0, $3)
			ON CONFLICT (universe, session_id) DO NOTHING`,
			s.universe, is.SessionID, []byte(`{}`))
		if err != nil {
			return fmt.Errorf("postgres: import %s: %w", is.SessionID, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: %s", store.ErrSessionExists, is.SessionID)
		}
	}
	_, life, err := store.ImportedEvents(is, func(events []core.Event, refs []content.Digest) error {
		if len(refs) > 0 {
			digests := digestArgs(refs)
			rows, err := tx.Query(ctx, lockBlobsSQL, s.universe, digests)
			if err != nil {
				return fmt.Errorf("postgres: import %s: check refs: %w", is.SessionID, err)
			}
			found, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
			if err != nil {
				return fmt.Errorf("postgres: import %s: check refs: %w", is.SessionID, err)
			}
			if missing := absent(refs, found); len(missing) > 0 {
				return &blob.MissingError{Digests: missing}
			}
			if _, err := tx.Exec(ctx, insertRootsSQL, s.universe, is.SessionID, digests); err != nil {
				return fmt.Errorf("postgres: import %s: record roots: %w", is.SessionID, err)
			}
		}
		cols := eventColumns(events)
		if _, err := tx.Exec(ctx, insertEventsSQL, s.universe, is.SessionID, cols.seq, cols.at, cols.kind, cols.version,
			cols.jfrom, cols.njoins, cols.joins, cols.payload); err != nil {
			return fmt.Errorf("postgres: import %s: write events: %w", is.SessionID, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	raw, err := json.Marshal(life)
	if err != nil {
		return fmt.Errorf("postgres: import %s: encode lifecycle: %w", is.SessionID, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE sessions SET head = $3, status = $4, has_unfinished = $5,
			created_at_ms = $6, updated_at_ms = $7, lifecycle = $8
		WHERE universe = $1 AND session_id = $2`,
		s.universe, is.SessionID, life.Head, life.Status, life.Unfinished(), life.CreatedAtMs, life.UpdatedAtMs, raw); err != nil {
		return fmt.Errorf("postgres: import %s: %w", is.SessionID, err)
	}
	if is.CloneOf != "" {
		return s.cloneIn(ctx, tx, is.SessionID, is.CloneOf)
	}
	return nil
}
