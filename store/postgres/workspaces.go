package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

var _ store.Workspaces = (*Store)(nil)

// lockBlob key-share locks d's catalog row for the rest of tx, so a
// concurrent collector cannot delete it before the row that references it
// is written; afterwards the foreign key holds it. An absent blob is a
// *blob.MissingError.
func (s *Store) lockBlob(ctx context.Context, tx pgx.Tx, d content.Digest) error {
	rows, err := tx.Query(ctx, `SELECT digest FROM blobs WHERE universe = $1 AND digest = $2 FOR KEY SHARE`,
		s.universe, d[:])
	if err != nil {
		return fmt.Errorf("lock blob: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return fmt.Errorf("lock blob: %w", err)
	}
	if len(found) == 0 {
		return &blob.MissingError{Digests: []content.Digest{d}}
	}
	return nil
}

// wrapUnlessMissing leaves a *blob.MissingError as it is and names the
// operation in any other error.
func wrapUnlessMissing(what string, err error) error {
	if me := (*blob.MissingError)(nil); errors.As(err, &me) {
		return err
	}
	return fmt.Errorf("postgres: %s: %w", what, err)
}

const workspaceColumns = `name, revision, head, created_at_ms, updated_at_ms`

func scanWorkspace(r pgx.Row) (store.Workspace, error) {
	var w store.Workspace
	var head []byte
	if err := r.Scan(&w.Name, &w.Revision, &head, &w.CreatedAtMs, &w.UpdatedAtMs); err != nil {
		return store.Workspace{}, err
	}
	if len(head) != len(w.Head) {
		return store.Workspace{}, fmt.Errorf("stored head of %s has %d bytes", w.Name, len(head))
	}
	w.Head = content.Digest(head)
	return w, nil
}

// CreateWorkspace implements store.Workspaces.
func (s *Store) CreateWorkspace(ctx context.Context, name string, head content.Digest) (store.Workspace, error) {
	if err := store.PrepareWorkspace(name, head); err != nil {
		return store.Workspace{}, err
	}
	now := s.now().UnixMilli()
	w := store.Workspace{Name: name, Revision: 1, Head: head, CreatedAtMs: now, UpdatedAtMs: now}
	if err := inTx(ctx, s.pool, func(tx pgx.Tx) error { return s.createWorkspaceIn(ctx, tx, w) }); err != nil {
		return store.Workspace{}, err
	}
	return w, nil
}

// createWorkspaceIn inserts w in tx, unless its name is taken or its head
// absent.
func (s *Store) createWorkspaceIn(ctx context.Context, tx pgx.Tx, w store.Workspace) error {
	// A taken name is reported before an absent head, as in every backend;
	// a creator racing past this check still loses at the INSERT.
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM workspaces WHERE universe = $1 AND name = $2)`,
		s.universe, w.Name).Scan(&exists); err != nil {
		return fmt.Errorf("postgres: create workspace %s: %w", w.Name, err)
	}
	if exists {
		return fmt.Errorf("%w: %s", store.ErrWorkspaceExists, w.Name)
	}
	if err := s.lockBlob(ctx, tx, w.Head); err != nil {
		return wrapUnlessMissing("create workspace "+w.Name, err)
	}
	tag, err := tx.Exec(ctx, `INSERT INTO workspaces (universe, `+workspaceColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (universe, name) DO NOTHING`,
		s.universe, w.Name, w.Revision, w.Head[:], w.CreatedAtMs, w.UpdatedAtMs)
	if err != nil {
		return fmt.Errorf("postgres: create workspace %s: %w", w.Name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", store.ErrWorkspaceExists, w.Name)
	}
	return nil
}

// Workspace implements store.Workspaces.
func (s *Store) Workspace(ctx context.Context, name string) (store.Workspace, error) {
	w, err := scanWorkspace(s.pool.QueryRow(ctx,
		`SELECT `+workspaceColumns+` FROM workspaces WHERE universe = $1 AND name = $2`, s.universe, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Workspace{}, fmt.Errorf("%w: %s", store.ErrWorkspaceNotFound, name)
	}
	if err != nil {
		return store.Workspace{}, fmt.Errorf("postgres: workspace %s: %w", name, err)
	}
	return w, nil
}

// Workspaces implements store.Workspaces. Names compare as bytes (COLLATE "C").
func (s *Store) Workspaces(ctx context.Context, afterName string, limit int) ([]store.Workspace, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `SELECT `+workspaceColumns+` FROM workspaces
		WHERE universe = $1 AND name > $2 ORDER BY name LIMIT $3`, s.universe, afterName, lim)
	if err != nil {
		return nil, fmt.Errorf("postgres: workspaces: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Workspace, error) { return scanWorkspace(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: workspaces: %w", err)
	}
	if out == nil {
		out = []store.Workspace{}
	}
	return out, nil
}

// MoveHead implements store.Workspaces. The workspace row is locked FOR
// UPDATE before its revision is compared, so concurrent movers queue on it
// and every one after the first sees the new revision; the UPDATE repeats
// the comparison besides.
func (s *Store) MoveHead(ctx context.Context, name string, expectedRevision int64, head content.Digest) (store.Workspace, error) {
	if err := store.PrepareWorkspace(name, head); err != nil {
		return store.Workspace{}, err
	}
	var w store.Workspace
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := scanWorkspace(tx.QueryRow(ctx, `SELECT `+workspaceColumns+` FROM workspaces
			WHERE universe = $1 AND name = $2 FOR UPDATE`, s.universe, name))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", store.ErrWorkspaceNotFound, name)
		}
		if err != nil {
			return fmt.Errorf("postgres: move workspace %s: %w", name, err)
		}
		if cur.Revision != expectedRevision {
			return &store.WorkspaceConflictError{Name: name, Expected: expectedRevision, Actual: cur.Revision}
		}
		if err := s.lockBlob(ctx, tx, head); err != nil {
			return wrapUnlessMissing("move workspace "+name, err)
		}
		w = cur
		w.Revision++
		w.Head = head
		w.UpdatedAtMs = s.now().UnixMilli()
		tag, err := tx.Exec(ctx, `UPDATE workspaces SET revision = $1, head = $2, updated_at_ms = $3
			WHERE universe = $4 AND name = $5 AND revision = $6`,
			w.Revision, head[:], w.UpdatedAtMs, s.universe, name, expectedRevision)
		if err != nil {
			return fmt.Errorf("postgres: move workspace %s: %w", name, err)
		}
		if tag.RowsAffected() != 1 {
			// Unreachable while the row lock is held; should it ever be
			// lost, the conditional UPDATE still refuses, as a conflict.
			var actual int64
			if err := tx.QueryRow(ctx, `SELECT revision FROM workspaces WHERE universe = $1 AND name = $2`,
				s.universe, name).Scan(&actual); err != nil {
				return fmt.Errorf("postgres: move workspace %s: %w", name, err)
			}
			return &store.WorkspaceConflictError{Name: name, Expected: expectedRevision, Actual: actual}
		}
		return nil
	})
	if err != nil {
		return store.Workspace{}, err
	}
	return w, nil
}

// PutSnapshot implements store.Workspaces.
func (s *Store) PutSnapshot(ctx context.Context, manifest content.Digest) (store.Snapshot, error) {
	if err := store.PrepareSnapshot(manifest); err != nil {
		return store.Snapshot{}, err
	}
	snap := store.Snapshot{Manifest: manifest}
	if err := inTx(ctx, s.pool, func(tx pgx.Tx) error { return s.putSnapshotIn(ctx, tx, &snap, s.now().UnixMilli()) }); err != nil {
		return store.Snapshot{}, err
	}
	return snap, nil
}

// putSnapshotIn records snap's manifest in tx at atMs, and reads the first
// record, this one or an earlier one, into snap.
func (s *Store) putSnapshotIn(ctx context.Context, tx pgx.Tx, snap *store.Snapshot, atMs int64) error {
	if err := s.lockBlob(ctx, tx, snap.Manifest); err != nil {
		return wrapUnlessMissing("put snapshot "+snap.Manifest.String(), err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO snapshots (universe, manifest, created_at_ms) VALUES ($1, $2, $3)
		ON CONFLICT (universe, manifest) DO NOTHING`, s.universe, snap.Manifest[:], atMs); err != nil {
		return fmt.Errorf("postgres: put snapshot %s: %w", snap.Manifest, err)
	}
	// The first record wins, whether this call or an earlier one wrote it.
	if err := tx.QueryRow(ctx, `SELECT created_at_ms FROM snapshots WHERE universe = $1 AND manifest = $2`,
		s.universe, snap.Manifest[:]).Scan(&snap.CreatedAtMs); err != nil {
		return fmt.Errorf("postgres: put snapshot %s: %w", snap.Manifest, err)
	}
	return nil
}

// Snapshot implements store.Workspaces.
func (s *Store) Snapshot(ctx context.Context, manifest content.Digest) (store.Snapshot, error) {
	snap := store.Snapshot{Manifest: manifest}
	err := s.pool.QueryRow(ctx, `SELECT created_at_ms FROM snapshots WHERE universe = $1 AND manifest = $2`,
		s.universe, manifest[:]).Scan(&snap.CreatedAtMs)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Snapshot{}, fmt.Errorf("%w: %s", store.ErrSnapshotNotFound, manifest)
	}
	if err != nil {
		return store.Snapshot{}, fmt.Errorf("postgres: snapshot %s: %w", manifest, err)
	}
	return snap, nil
}
