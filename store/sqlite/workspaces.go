package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

var _ store.Workspaces = (*Store)(nil)

// Every write below runs in one immediate transaction: the revision check,
// the blob existence check and the write cannot interleave with another
// writer in this or another process, and the foreign keys hold the blob
// afterwards.

// requireBlob fails with a *blob.MissingError unless d is in the catalog.
func (s *Store) requireBlob(ctx context.Context, tx stmtTx, d content.Digest) error {
	raw, err := digestsJSON([]content.Digest{d})
	if err != nil {
		return err
	}
	missing, err := missingIn(ctx, tx, s.universe, raw)
	if err != nil {
		return fmt.Errorf("check blob: %w", err)
	}
	if len(missing) > 0 {
		return &blob.MissingError{Digests: missing}
	}
	return nil
}

const workspaceColumns = `name, revision, head, created_at_ms, updated_at_ms`

type rowScanner interface{ Scan(dest ...any) error }

func scanWorkspace(r rowScanner) (store.Workspace, error) {
	var w store.Workspace
	var head string
	if err := r.Scan(&w.Name, &w.Revision, &head, &w.CreatedAtMs, &w.UpdatedAtMs); err != nil {
		return store.Workspace{}, err
	}
	d, err := content.ParseDigest(head)
	if err != nil {
		return store.Workspace{}, fmt.Errorf("stored head of %s: %w", w.Name, err)
	}
	w.Head = d
	return w, nil
}

// CreateWorkspace implements store.Workspaces.
func (s *Store) CreateWorkspace(ctx context.Context, name string, head content.Digest) (store.Workspace, error) {
	if err := store.PrepareWorkspace(name, head); err != nil {
		return store.Workspace{}, err
	}
	now := s.nowMs()
	w := store.Workspace{Name: name, Revision: 1, Head: head, CreatedAtMs: now, UpdatedAtMs: now}
	if err := s.writeTx(ctx, func(tx stmtTx) error { return s.createWorkspaceIn(ctx, tx, w) }); err != nil {
		return store.Workspace{}, err
	}
	return w, nil
}

// createWorkspaceIn inserts w in tx, unless its name is taken or its head
// absent.
func (s *Store) createWorkspaceIn(ctx context.Context, tx stmtTx, w store.Workspace) error {
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM workspaces WHERE universe = ? AND name = ?)`,
		s.universe, w.Name).Scan(&exists); err != nil {
		return fmt.Errorf("sqlite: create workspace %s: %w", w.Name, err)
	}
	if exists {
		return fmt.Errorf("%w: %s", store.ErrWorkspaceExists, w.Name)
	}
	if err := s.requireBlob(ctx, tx, w.Head); err != nil {
		return wrapUnlessMissing("create workspace "+w.Name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO workspaces (universe, `+workspaceColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
		s.universe, w.Name, w.Revision, w.Head.String(), w.CreatedAtMs, w.UpdatedAtMs); err != nil {
		return fmt.Errorf("sqlite: create workspace %s: %w", w.Name, err)
	}
	return nil
}

// wrapUnlessMissing leaves a *blob.MissingError as it is, for callers that
// compare it, and names the operation in any other error.
func wrapUnlessMissing(what string, err error) error {
	if me := (*blob.MissingError)(nil); errors.As(err, &me) {
		return err
	}
	return fmt.Errorf("sqlite: %s: %w", what, err)
}

// Workspace implements store.Workspaces.
func (s *Store) Workspace(ctx context.Context, name string) (store.Workspace, error) {
	w, err := scanWorkspace(s.reads.QueryRowContext(ctx,
		`SELECT `+workspaceColumns+` FROM workspaces WHERE universe = ? AND name = ?`, s.universe, name))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Workspace{}, fmt.Errorf("%w: %s", store.ErrWorkspaceNotFound, name)
	}
	if err != nil {
		return store.Workspace{}, fmt.Errorf("sqlite: workspace %s: %w", name, err)
	}
	return w, nil
}

// Workspaces implements store.Workspaces. SQLite compares TEXT with BINARY
// collation, which is byte order.
func (s *Store) Workspaces(ctx context.Context, afterName string, limit int) ([]store.Workspace, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.reads.QueryContext(ctx, `SELECT `+workspaceColumns+` FROM workspaces
		WHERE universe = ? AND name > ? ORDER BY name LIMIT ?`, s.universe, afterName, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: workspaces: %w", err)
	}
	defer rows.Close()
	out := []store.Workspace{}
	for rows.Next() {
		w, err := scanWorkspace(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: workspaces: %w", err)
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: workspaces: %w", err)
	}
	return out, nil
}

// MoveHead implements store.Workspaces.
func (s *Store) MoveHead(ctx context.Context, name string, expectedRevision int64, head content.Digest) (store.Workspace, error) {
	if err := store.PrepareWorkspace(name, head); err != nil {
		return store.Workspace{}, err
	}
	var w store.Workspace
	err := s.writeTx(ctx, func(tx stmtTx) error {
		cur, err := scanWorkspace(tx.QueryRowContext(ctx,
			`SELECT `+workspaceColumns+` FROM workspaces WHERE universe = ? AND name = ?`, s.universe, name))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %s", store.ErrWorkspaceNotFound, name)
		}
		if err != nil {
			return fmt.Errorf("sqlite: move workspace %s: %w", name, err)
		}
		if cur.Revision != expectedRevision {
			return &store.WorkspaceConflictError{Name: name, Expected: expectedRevision, Actual: cur.Revision}
		}
		if err := s.requireBlob(ctx, tx, head); err != nil {
			return wrapUnlessMissing("move workspace "+name, err)
		}
		w = cur
		w.Revision++
		w.Head = head
		w.UpdatedAtMs = s.nowMs()
		res, err := tx.ExecContext(ctx, `UPDATE workspaces SET revision = ?, head = ?, updated_at_ms = ?
			WHERE universe = ? AND name = ? AND revision = ?`,
			w.Revision, head.String(), w.UpdatedAtMs, s.universe, name, expectedRevision)
		if err != nil {
			return fmt.Errorf("sqlite: move workspace %s: %w", name, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("sqlite: move workspace %s: updated %d rows (%v)", name, n, err)
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
	snap := store.Snapshot{Manifest: manifest, CreatedAtMs: s.nowMs()}
	if err := s.writeTx(ctx, func(tx stmtTx) error { return s.putSnapshotIn(ctx, tx, &snap) }); err != nil {
		return store.Snapshot{}, err
	}
	return snap, nil
}

// putSnapshotIn records snap in tx, or reads the record already there into
// it.
func (s *Store) putSnapshotIn(ctx context.Context, tx stmtTx, snap *store.Snapshot) error {
	err := tx.QueryRowContext(ctx, `SELECT created_at_ms FROM snapshots WHERE universe = ? AND manifest = ?`,
		s.universe, snap.Manifest.String()).Scan(&snap.CreatedAtMs)
	if err == nil {
		return nil // already recorded: keep the first record
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: put snapshot %s: %w", snap.Manifest, err)
	}
	if err := s.requireBlob(ctx, tx, snap.Manifest); err != nil {
		return wrapUnlessMissing("put snapshot "+snap.Manifest.String(), err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO snapshots (universe, manifest, created_at_ms) VALUES (?, ?, ?)`,
		s.universe, snap.Manifest.String(), snap.CreatedAtMs); err != nil {
		return fmt.Errorf("sqlite: put snapshot %s: %w", snap.Manifest, err)
	}
	return nil
}

// Snapshot implements store.Workspaces.
func (s *Store) Snapshot(ctx context.Context, manifest content.Digest) (store.Snapshot, error) {
	snap := store.Snapshot{Manifest: manifest}
	err := s.reads.QueryRowContext(ctx, `SELECT created_at_ms FROM snapshots WHERE universe = ? AND manifest = ?`,
		s.universe, manifest.String()).Scan(&snap.CreatedAtMs)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Snapshot{}, fmt.Errorf("%w: %s", store.ErrSnapshotNotFound, manifest)
	}
	if err != nil {
		return store.Snapshot{}, fmt.Errorf("sqlite: snapshot %s: %w", manifest, err)
	}
	return snap, nil
}
