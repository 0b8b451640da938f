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

var _ store.StorageReporter = (*Store)(nil)

// UniverseUsage implements store.StorageReporter in one statement, so its
// totals describe one snapshot. The holders' foreign keys guarantee every
// root and checkpoint a catalog row, so the joins drop nothing.
func (s *Store) UniverseUsage(ctx context.Context) (store.UniverseUsage, error) {
	var u store.UniverseUsage
	err := s.pool.QueryRow(ctx, `SELECT b.n, b.bytes, b.objects, b.object_bytes, ss.n, r.n, r.bytes, c.n, c.bytes, e.n, e.bytes
		FROM (SELECT count(*) AS n, coalesce(sum(size), 0)::bigint AS bytes, count(object_key) AS objects,
				coalesce(sum(size) FILTER (WHERE object_key IS NOT NULL), 0)::bigint AS object_bytes
			FROM blobs WHERE universe = $1) AS b,
		(SELECT count(*) AS n FROM sessions WHERE universe = $1) AS ss,
		(SELECT count(*) AS n, coalesce(sum(bb.size), 0)::bigint AS bytes FROM session_roots AS rr
			JOIN blobs AS bb ON bb.universe = rr.universe AND bb.digest = rr.digest
			WHERE rr.universe = $1) AS r,
		(SELECT (SELECT count(*) FROM checkpoints WHERE universe = $1) AS n, coalesce(sum(bb.size), 0)::bigint AS bytes
			FROM (WITH RECURSIVE reach(digest) AS (
					SELECT digest FROM checkpoints WHERE universe = $1
					UNION
					SELECT e.child FROM reach AS r JOIN retention_edges AS e ON e.universe = $1 AND e.parent = r.digest)
				SELECT digest FROM reach) AS rc
			JOIN blobs AS bb ON bb.universe = $1 AND bb.digest = rc.digest) AS c,
		(SELECT count(*) AS n, coalesce(sum(`+eventBytesSQL+`), 0)::bigint AS bytes FROM events AS ev WHERE ev.universe = $1) AS e`, s.universe).
		Scan(&u.Blobs, &u.PhysicalBytes, &u.ObjectBlobs, &u.ObjectBytes, &u.Sessions, &u.Roots, &u.LogicalBytes, &u.Checkpoints, &u.CheckpointBytes,
			&u.Events, &u.EventBytes)
	if err != nil {
		return store.UniverseUsage{}, fmt.Errorf("postgres: universe usage: %w", err)
	}
	u.InlineBlobs, u.InlineBytes = u.Blobs-u.ObjectBlobs, u.PhysicalBytes-u.ObjectBytes
	return u, nil
}

// eventBytesSQL is the bytes an events row (ev) keeps its event in.
const eventBytesSQL = `octet_length(ev.payload) + coalesce(octet_length(array_to_string(ev.joins, '')), 0)`

// sessionUsageSQL totals, for each session the page subquery selects, its
// roots (read through the primary key (universe, session_id, digest), each
// probed through session_roots_digest for another session rooting the same
// blob) and its checkpoints (through their primary key). The cost follows
// the page's roots, not the universe's. OFFSET 0 keeps the planner from
// inlining x, which would evaluate the EXISTS once per use of shared.
const sessionUsageSQL = `SELECT p.session_id, r.n, r.bytes, r.shared_n, r.shared_bytes, c.n, c.bytes, e.n, e.bytes
	FROM (%s) AS p
	CROSS JOIN LATERAL (
		SELECT count(*) AS n, coalesce(sum(x.size), 0)::bigint AS bytes,
			count(*) FILTER (WHERE x.shared) AS shared_n,
			coalesce(sum(x.size) FILTER (WHERE x.shared), 0)::bigint AS shared_bytes
		FROM (SELECT b.size, EXISTS (SELECT 1 FROM session_roots AS o
					WHERE o.universe = rr.universe AND o.digest = rr.digest AND o.session_id <> rr.session_id) AS shared
			FROM session_roots AS rr
			JOIN blobs AS b ON b.universe = rr.universe AND b.digest = rr.digest
			WHERE rr.universe = $1 AND rr.session_id = p.session_id
			OFFSET 0) AS x) AS r
	CROSS JOIN LATERAL (
		SELECT (SELECT count(*) FROM checkpoints AS cc WHERE cc.universe = $1 AND cc.session_id = p.session_id) AS n,
			coalesce(sum(b.size), 0)::bigint AS bytes
		FROM (WITH RECURSIVE reach(digest) AS (
				SELECT cc.digest FROM checkpoints AS cc WHERE cc.universe = $1 AND cc.session_id = p.session_id
				UNION
				SELECT e.child FROM reach AS r JOIN retention_edges AS e ON e.universe = $1 AND e.parent = r.digest)
			SELECT digest FROM reach) AS rc
		JOIN blobs AS b ON b.universe = $1 AND b.digest = rc.digest) AS c
	CROSS JOIN LATERAL (
		SELECT count(*) AS n, coalesce(sum(` + eventBytesSQL + `), 0)::bigint AS bytes
		FROM events AS ev
		WHERE ev.universe = $1 AND ev.session_id = p.session_id) AS e
	ORDER BY p.session_id`

// SessionUsage implements store.StorageReporter.
func (s *Store) SessionUsage(ctx context.Context, afterID string, limit int) ([]store.SessionUsage, error) {
	var lim *int64
	if limit > 0 {
		l := int64(limit)
		lim = &l
	}
	return s.sessionUsage(ctx, fmt.Sprintf(sessionUsageSQL,
		`SELECT session_id FROM sessions WHERE universe = $1 AND session_id > $2 ORDER BY session_id LIMIT $3`),
		s.universe, afterID, lim)
}

// SessionUsageOf implements store.StorageReporter.
func (s *Store) SessionUsageOf(ctx context.Context, sessionID string) (store.SessionUsage, error) {
	out, err := s.sessionUsage(ctx, fmt.Sprintf(sessionUsageSQL,
		`SELECT session_id FROM sessions WHERE universe = $1 AND session_id = $2`), s.universe, sessionID)
	if err != nil {
		return store.SessionUsage{}, err
	}
	if len(out) == 0 {
		return store.SessionUsage{}, fmt.Errorf("%w: %s", store.ErrSessionNotFound, sessionID)
	}
	return out[0], nil
}

func (s *Store) sessionUsage(ctx context.Context, query string, args ...any) ([]store.SessionUsage, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: session usage: %w", err)
	}
	var out []store.SessionUsage
	var u store.SessionUsage
	_, err = pgx.ForEachRow(rows, []any{&u.SessionID, &u.Roots, &u.LogicalBytes, &u.SharedRoots, &u.SharedBytes, &u.Checkpoints, &u.CheckpointBytes, &u.Events, &u.EventBytes}, func() error {
		out = append(out, u)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: session usage: %w", err)
	}
	return out, nil
}

// BlobHolders implements store.StorageReporter in one statement (one
// snapshot). Each list is read in order from an index that ends with its
// sort key (migration 0006), so it stops one row past limit however many
// holders a blob has.
func (s *Store) BlobHolders(ctx context.Context, d content.Digest, limit int) (store.BlobHolders, error) {
	var read *int64
	if limit > 0 {
		l := int64(limit) + 1
		read = &l
	}
	h := store.BlobHolders{Digest: d}
	var parents [][]byte
	var cpSessions []string
	var cpSeqs []int64
	err := s.pool.QueryRow(ctx, `SELECT b.size, b.object_key IS NOT NULL, b.touched_at,
			ARRAY(SELECT r.session_id FROM session_roots AS r
				WHERE r.universe = b.universe AND r.digest = b.digest ORDER BY r.session_id LIMIT $3),
			ARRAY(SELECT w.name FROM workspaces AS w
				WHERE w.universe = b.universe AND w.head = b.digest ORDER BY w.name LIMIT $3),
			ARRAY(SELECT e.parent FROM retention_edges AS e
				WHERE e.universe = b.universe AND e.child = b.digest ORDER BY e.parent LIMIT $3),
			EXISTS (SELECT 1 FROM snapshots AS sn WHERE sn.universe = b.universe AND sn.manifest = b.digest),
			ARRAY(SELECT c.session_id FROM checkpoints AS c
				WHERE c.universe = b.universe AND c.digest = b.digest ORDER BY c.session_id, c.seq LIMIT $3),
			ARRAY(SELECT c.seq FROM checkpoints AS c
				WHERE c.universe = b.universe AND c.digest = b.digest ORDER BY c.session_id, c.seq LIMIT $3)
		FROM blobs AS b WHERE b.universe = $1 AND b.digest = $2`, s.universe, d[:], read).
		Scan(&h.Size, &h.Object, &h.TouchedAt, &h.Sessions, &h.Workspaces, &parents, &h.Snapshot, &cpSessions, &cpSeqs)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.BlobHolders{}, &blob.NotFoundError{Digest: d}
	}
	if err != nil {
		return store.BlobHolders{}, fmt.Errorf("postgres: blob holders: %w", err)
	}
	if len(cpSessions) != len(cpSeqs) {
		return store.BlobHolders{}, fmt.Errorf("postgres: blob holders: %d checkpoint sessions for %d seqs", len(cpSessions), len(cpSeqs))
	}
	for i := range cpSessions {
		h.Checkpoints = append(h.Checkpoints, store.CheckpointHolder{SessionID: cpSessions[i], Seq: cpSeqs[i]})
	}
	if h.Parents, err = parseDigests(parents); err != nil {
		return store.BlobHolders{}, err
	}
	h.Sessions, h.SessionsTruncated = store.CutHolders(h.Sessions, limit)
	h.Workspaces, h.WorkspacesTruncated = store.CutHolders(h.Workspaces, limit)
	h.Parents, h.ParentsTruncated = store.CutHolders(h.Parents, limit)
	h.Checkpoints, h.CheckpointsTruncated = store.CutHolders(h.Checkpoints, limit)
	return h, nil
}
