package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

var _ store.StorageReporter = (*Store)(nil)

// UniverseUsage implements store.StorageReporter in one statement, so its
// totals describe one snapshot of the file.
func (s *Store) UniverseUsage(ctx context.Context) (store.UniverseUsage, error) {
	var u store.UniverseUsage
	err := s.reads.ScanTotals(ctx, `SELECT b.n, b.bytes, b.objects, b.object_bytes, ss.n, r.n, r.bytes, c.n, c.bytes, e.n, e.bytes
		FROM (SELECT count(*) AS n, coalesce(sum(size), 0) AS bytes, count(object_key) AS objects,
				coalesce(sum(CASE WHEN object_key IS NOT NULL THEN size ELSE 0 END), 0) AS object_bytes
			FROM blobs WHERE universe = ?1) AS b,
		(SELECT count(*) AS n FROM sessions WHERE universe = ?1) AS ss,
		(SELECT count(*) AS n, coalesce(sum(bb.size), 0) AS bytes FROM session_roots AS rr
			LEFT JOIN blobs AS bb ON bb.universe = rr.universe AND bb.digest = rr.digest
			WHERE rr.universe = ?1) AS r,
		(SELECT (SELECT count(*) FROM checkpoints WHERE universe = ?1) AS n, coalesce(sum(bb.size), 0) AS bytes
			FROM (WITH RECURSIVE reach(digest) AS (
					SELECT digest FROM checkpoints WHERE universe = ?1
					UNION
					SELECT e.child FROM reach AS r CROSS JOIN retention_edges AS e ON e.universe = ?1 AND e.parent = r.digest)
				SELECT digest FROM reach) AS rc
			LEFT JOIN blobs AS bb ON bb.universe = ?1 AND bb.digest = rc.digest) AS c,
		(SELECT count(*) AS n, coalesce(sum(`+eventBytesSQL+`), 0) AS bytes FROM events AS ev WHERE ev.universe = ?1) AS e`, s.universe).
		Scan(&u.Blobs, &u.PhysicalBytes, &u.ObjectBlobs, &u.ObjectBytes, &u.Sessions, &u.Roots, &u.LogicalBytes, &u.Checkpoints, &u.CheckpointBytes,
			&u.Events, &u.EventBytes)
	if err != nil {
		return store.UniverseUsage{}, fmt.Errorf("sqlite: universe usage: %w", err)
	}
	u.InlineBlobs, u.InlineBytes = u.Blobs-u.ObjectBlobs, u.PhysicalBytes-u.ObjectBytes
	return u, nil
}

// eventBytesSQL is the bytes an events row (ev) keeps its event in.
const eventBytesSQL = `length(ev.payload) + coalesce(length(ev.joins), 0)`

// sessionUsageSQL totals the roots, checkpoints (with the pages and chunks
// their indexes reach through retention edges, each step a CROSS JOIN so the
// edges are probed by parent, not scanned) and events of the sessions the page
// CTE selects. CROSS JOIN fixes the page as the outer loop (SQLite's
// planner, without statistics, could otherwise scan every root of the
// universe), so each session's roots are read through the primary key
// (universe, session_id, digest) and probed through session_roots_digest
// for another session rooting the same blob: the cost follows the page's
// roots, not the universe's. rooted is materialized so the probe runs once
// per root although two sums use it.
const sessionUsageSQL = `WITH RECURSIVE page AS (%s),
	rooted AS MATERIALIZED (
		SELECT r.session_id, coalesce(b.size, 0) AS size,
			EXISTS (SELECT 1 FROM session_roots AS o
				WHERE o.universe = r.universe AND o.digest = r.digest AND o.session_id <> r.session_id) AS shared
		FROM page AS p
		CROSS JOIN session_roots AS r ON r.universe = ?1 AND r.session_id = p.session_id
		LEFT JOIN blobs AS b ON b.universe = r.universe AND b.digest = r.digest),
	roots AS (
		SELECT session_id, count(*) AS n, sum(size) AS bytes, sum(shared) AS shared_n, sum(shared * size) AS shared_bytes
		FROM rooted GROUP BY session_id),
	cpreach(session_id, digest) AS (
		SELECT c.session_id, c.digest
		FROM page AS p
		CROSS JOIN checkpoints AS c ON c.universe = ?1 AND c.session_id = p.session_id
		UNION
		SELECT r.session_id, e.child FROM cpreach AS r
		CROSS JOIN retention_edges AS e ON e.universe = ?1 AND e.parent = r.digest),
	cps AS (
		SELECT r.session_id, (SELECT count(*) FROM checkpoints AS c WHERE c.universe = ?1 AND c.session_id = r.session_id) AS n,
			coalesce(sum(b.size), 0) AS bytes
		FROM cpreach AS r
		LEFT JOIN blobs AS b ON b.universe = ?1 AND b.digest = r.digest
		GROUP BY r.session_id),
	evs AS (
		SELECT ev.session_id, count(*) AS n, sum(` + eventBytesSQL + `) AS bytes
		FROM page AS p
		CROSS JOIN events AS ev ON ev.universe = ?1 AND ev.session_id = p.session_id
		GROUP BY ev.session_id)
	SELECT p.session_id, coalesce(roots.n, 0), coalesce(roots.bytes, 0), coalesce(roots.shared_n, 0),
		coalesce(roots.shared_bytes, 0), coalesce(cps.n, 0), coalesce(cps.bytes, 0), coalesce(evs.n, 0), coalesce(evs.bytes, 0)
	FROM page AS p
	LEFT JOIN roots ON roots.session_id = p.session_id
	LEFT JOIN cps ON cps.session_id = p.session_id
	LEFT JOIN evs ON evs.session_id = p.session_id
	ORDER BY p.session_id`

// SessionUsage implements store.StorageReporter.
func (s *Store) SessionUsage(ctx context.Context, afterID string, limit int) ([]store.SessionUsage, error) {
	if limit <= 0 {
		limit = -1
	}
	return s.sessionUsage(ctx, fmt.Sprintf(sessionUsageSQL,
		`SELECT session_id FROM sessions WHERE universe = ?1 AND session_id > ?2 ORDER BY session_id LIMIT ?3`),
		s.universe, afterID, limit)
}

// SessionUsageOf implements store.StorageReporter.
func (s *Store) SessionUsageOf(ctx context.Context, sessionID string) (store.SessionUsage, error) {
	out, err := s.sessionUsage(ctx, fmt.Sprintf(sessionUsageSQL,
		`SELECT session_id FROM sessions WHERE universe = ?1 AND session_id = ?2`), s.universe, sessionID)
	if err != nil {
		return store.SessionUsage{}, err
	}
	if len(out) == 0 {
		return store.SessionUsage{}, fmt.Errorf("%w: %s", store.ErrSessionNotFound, sessionID)
	}
	return out[0], nil
}

func (s *Store) sessionUsage(ctx context.Context, query string, args ...any) ([]store.SessionUsage, error) {
	rows, err := s.reads.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: session usage: %w", err)
	}
	defer rows.Close()
	var out []store.SessionUsage
	for rows.Next() {
		var u store.SessionUsage
		if err := rows.Scan(&u.SessionID, &u.Roots, &u.LogicalBytes, &u.SharedRoots, &u.SharedBytes, &u.Checkpoints, &u.CheckpointBytes, &u.Events, &u.EventBytes); err != nil {
			return nil, fmt.Errorf("sqlite: session usage: %w", err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: session usage: %w", err)
	}
	return out, nil
}

// BlobHolders implements store.StorageReporter. The holder indexes of a
// WITHOUT ROWID table carry its primary key after the indexed columns, so
// each list is read in order from its index and stops one row past limit.
// One read transaction makes the row and its holders one snapshot.
func (s *Store) BlobHolders(ctx context.Context, d content.Digest, limit int) (store.BlobHolders, error) {
	begun, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return store.BlobHolders{}, fmt.Errorf("sqlite: blob holders: %w", err)
	}
	defer s.reads.prepareWanted(ctx)        // after the rollback below
	defer func() { _ = begun.Rollback() }() // read only: nothing to commit
	tx := s.reads.tx(begun)
	h := store.BlobHolders{Digest: d}
	key := d.String()
	var touchedMs int64
	err = tx.QueryRowContext(ctx, `SELECT size, object_key IS NOT NULL, touched_at_ms FROM blobs WHERE universe = ? AND digest = ?`,
		s.universe, key).Scan(&h.Size, &h.Object, &touchedMs)
	if errors.Is(err, sql.ErrNoRows) {
		return store.BlobHolders{}, &blob.NotFoundError{Digest: d}
	}
	if err != nil {
		return store.BlobHolders{}, fmt.Errorf("sqlite: blob holders: %w", err)
	}
	h.TouchedAt = time.UnixMilli(touchedMs)
	read := limit + 1
	if limit <= 0 {
		read = -1
	}
	list := func(what, query string) ([]string, error) {
		rows, err := tx.QueryContext(ctx, query, s.universe, key, read)
		if err != nil {
			return nil, fmt.Errorf("sqlite: blob holders: %s: %w", what, err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				return nil, fmt.Errorf("sqlite: blob holders: %s: %w", what, err)
			}
			out = append(out, v)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlite: blob holders: %s: %w", what, err)
		}
		return out, nil
	}
	if h.Sessions, err = list("sessions", `SELECT session_id FROM session_roots
		WHERE universe = ? AND digest = ? ORDER BY session_id LIMIT ?`); err != nil {
		return store.BlobHolders{}, err
	}
	h.Sessions, h.SessionsTruncated = store.CutHolders(h.Sessions, limit)
	if h.Workspaces, err = list("workspaces", `SELECT name FROM workspaces
		WHERE universe = ? AND head = ? ORDER BY name LIMIT ?`); err != nil {
		return store.BlobHolders{}, err
	}
	h.Workspaces, h.WorkspacesTruncated = store.CutHolders(h.Workspaces, limit)
	parents, err := list("parents", `SELECT parent FROM retention_edges
		WHERE universe = ? AND child = ? ORDER BY parent LIMIT ?`)
	if err != nil {
		return store.BlobHolders{}, err
	}
	if h.Parents, err = parseDigests(parents); err != nil {
		return store.BlobHolders{}, err
	}
	h.Parents, h.ParentsTruncated = store.CutHolders(h.Parents, limit)
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM snapshots WHERE universe = ? AND manifest = ?)`,
		s.universe, key).Scan(&h.Snapshot); err != nil {
		return store.BlobHolders{}, fmt.Errorf("sqlite: blob holders: snapshot: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT session_id, seq FROM checkpoints
		WHERE universe = ? AND digest = ? ORDER BY session_id, seq LIMIT ?`, s.universe, key, read)
	if err != nil {
		return store.BlobHolders{}, fmt.Errorf("sqlite: blob holders: checkpoints: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c store.CheckpointHolder
		if err := rows.Scan(&c.SessionID, &c.Seq); err != nil {
			return store.BlobHolders{}, fmt.Errorf("sqlite: blob holders: checkpoints: %w", err)
		}
		h.Checkpoints = append(h.Checkpoints, c)
	}
	if err := rows.Err(); err != nil {
		return store.BlobHolders{}, fmt.Errorf("sqlite: blob holders: checkpoints: %w", err)
	}
	h.Checkpoints, h.CheckpointsTruncated = store.CutHolders(h.Checkpoints, limit)
	return h, nil
}
