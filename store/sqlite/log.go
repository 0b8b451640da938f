package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// Append implements store.SessionLog: the head check, the ref check, the
// events, the roots and the catalog row commit together or not at all.
func (s *Store) Append(ctx context.Context, sessionID string, expectedHead int64, proposals []core.Proposal) ([]core.Event, error) {
	return s.AppendBatch(ctx, sessionID, expectedHead, proposals, store.Batch{})
}

// AppendBatch implements store.BatchAppender: as Append, with b written
// first in the same transaction (a large blob of b is put before it, on
// its own, as WriteBatch does).
func (s *Store) AppendBatch(ctx context.Context, sessionID string, expectedHead int64, proposals []core.Proposal, b store.Batch) ([]core.Event, error) {
	refs, err := store.PrepareAppend(sessionID, expectedHead, proposals)
	if err != nil {
		return nil, err
	}
	refsJSON, err := digestsJSON(refs)
	if err != nil {
		return nil, err
	}
	batch, err := s.prepareBatch(ctx, b)
	if err != nil {
		return nil, err
	}
	var events []core.Event
	err = s.writeTx(ctx, func(tx stmtTx) error {
		if err := s.writeBatchIn(ctx, tx, batch); err != nil {
			return err
		}
		life := core.Lifecycle{SessionID: sessionID}
		var head int64
		var lifeJSON []byte
		err := tx.QueryRowContext(ctx, `SELECT head, lifecycle FROM sessions WHERE universe = ? AND session_id = ?`,
			s.universe, sessionID).Scan(&head, &lifeJSON)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			head = 0
		case err != nil:
			return fmt.Errorf("sqlite: append %s: read head: %w", sessionID, err)
		default:
			if err := json.Unmarshal(lifeJSON, &life); err != nil {
				return fmt.Errorf("sqlite: append %s: decode lifecycle: %w", sessionID, err)
			}
		}
		if head != expectedHead {
			return &store.HeadConflictError{SessionID: sessionID, Expected: expectedHead, Actual: head}
		}
		if len(refs) > 0 {
			missing, err := missingIn(ctx, tx, s.universe, refsJSON)
			if err != nil {
				return fmt.Errorf("sqlite: append %s: check refs: %w", sessionID, err)
			}
			if len(missing) > 0 {
				return &blob.MissingError{Digests: missing}
			}
		}

		events = store.Commit(head, proposals)
		life = store.Project(life, sessionID, events)
		if err := upsertSession(ctx, tx, s.universe, life); err != nil {
			return fmt.Errorf("sqlite: append %s: %w", sessionID, err)
		}
		if err := insertEvents(ctx, tx, s.universe, sessionID, events); err != nil {
			return fmt.Errorf("sqlite: append %s: %w", sessionID, err)
		}
		if len(refs) > 0 {
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO session_roots (universe, session_id, digest)
				SELECT ?, ?, value FROM json_each(?)`, s.universe, sessionID, refsJSON); err != nil {
				return fmt.Errorf("sqlite: append %s: record roots: %w", sessionID, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return events, nil
}

// upsertSession writes the catalog row; it precedes the events so their
// foreign key holds for a new session. An update leaves created_at_ms
// alone: it never changes, and SQLite rewrites the entry of an index
// (here sessions_newest) whenever its column is assigned, which cost every
// append one more page written.
func upsertSession(ctx context.Context, tx stmtTx, universe string, l core.Lifecycle) error {
	raw, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("encode lifecycle: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO sessions
		(universe, session_id, head, status, has_unfinished, created_at_ms, updated_at_ms, lifecycle)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (universe, session_id) DO UPDATE SET
			head = excluded.head, status = excluded.status, has_unfinished = excluded.has_unfinished,
			updated_at_ms = excluded.updated_at_ms, lifecycle = excluded.lifecycle`,
		universe, l.SessionID, l.Head, l.Status, l.Unfinished(), l.CreatedAtMs, l.UpdatedAtMs, string(raw))
	if err != nil {
		return fmt.Errorf("write session row: %w", err)
	}
	return nil
}

func insertEvents(ctx context.Context, tx stmtTx, universe, sessionID string, events []core.Event) error {
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO events
		(universe, session_id, seq, observed_at_ms, kind, version, joins, payload, encoding)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("prepare event insert: %w", err)
	}
	defer stmt.Close()
	joins := make([][]byte, len(events)) // nil (NULL) keeps "no joins" distinct from an empty list
	payloads := make([][]byte, len(events))
	for i, ev := range events {
		if ev.Joins != nil {
			if joins[i], err = json.Marshal(ev.Joins); err != nil {
				return fmt.Errorf("encode joins: %w", err)
			}
		}
		payloads[i] = ev.Payload
	}
	for i, cols := range encodeEventRows(joins, payloads) {
		ev := events[i]
		if _, err := stmt.ExecContext(ctx, universe, sessionID, ev.Seq, ev.ObservedAtMs, ev.Kind, ev.Version,
			cols.joins, cols.payload, cols.encoding); err != nil {
			return fmt.Errorf("insert event %d: %w", ev.Seq, err)
		}
	}
	return nil
}

// ReadAfter implements store.SessionLog.
func (s *Store) ReadAfter(ctx context.Context, sessionID string, after int64, limit int) ([]core.Event, error) {
	lay, err := s.layout(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return lay.ReadAfter(ctx, sessionID, after, limit, s.readRange)
}

// ReadBefore implements store.SessionLog: the newest events below before,
// returned oldest first.
func (s *Store) ReadBefore(ctx context.Context, sessionID string, before int64, limit int) ([]core.Event, error) {
	lay, err := s.layout(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return lay.ReadBefore(ctx, sessionID, before, limit, s.readRange)
}

// readRange is the store.RangeReader of the events table.
func (s *Store) readRange(ctx context.Context, owner string, from, to int64, limit int, desc bool) ([]core.Event, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	if to < 0 {
		to = math.MaxInt64
	}
	order := "ASC"
	if desc {
		order = "DESC"
	}
	rows, err := s.reads.QueryContext(ctx, `SELECT seq, observed_at_ms, kind, version, joins, payload, encoding
		FROM events WHERE universe = ? AND session_id = ? AND seq > ? AND seq <= ? ORDER BY seq `+order+` LIMIT ?`,
		s.universe, owner, from, to, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read %s: %w", owner, err)
	}
	defer rows.Close()
	var stored []storedEvent
	for rows.Next() {
		var r storedEvent
		var encoding sql.NullString
		if err := rows.Scan(&r.ev.Seq, &r.ev.ObservedAtMs, &r.ev.Kind, &r.ev.Version, &r.joins, &r.payload, &encoding); err != nil {
			return nil, fmt.Errorf("sqlite: read %s: %w", owner, err)
		}
		r.encoding = encoding.String
		stored = append(stored, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: read %s: %w", owner, err)
	}
	rows.Close()
	g := groupReader{ctx: ctx, s: s, owner: owner, stored: stored}
	evs := make([]core.Event, 0, len(stored))
	for i := range stored {
		ev, err := g.event(i)
		if err != nil {
			return nil, fmt.Errorf("sqlite: read %s seq %d: %w", owner, stored[i].ev.Seq, err)
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// Session implements store.SessionLog.
func (s *Store) Session(ctx context.Context, sessionID string) (core.Lifecycle, error) {
	var raw []byte
	err := s.reads.QueryRowContext(ctx, `SELECT lifecycle FROM sessions WHERE universe = ? AND session_id = ?`,
		s.universe, sessionID).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return core.Lifecycle{}, fmt.Errorf("%w: %s", store.ErrSessionNotFound, sessionID)
	}
	if err != nil {
		return core.Lifecycle{}, fmt.Errorf("sqlite: session %s: %w", sessionID, err)
	}
	var l core.Lifecycle
	if err := json.Unmarshal(raw, &l); err != nil {
		return core.Lifecycle{}, fmt.Errorf("sqlite: session %s: decode lifecycle: %w", sessionID, err)
	}
	return l, nil
}

// Sessions implements store.SessionLog.
func (s *Store) Sessions(ctx context.Context, afterID string, limit int) ([]core.Lifecycle, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.reads.QueryContext(ctx, `SELECT lifecycle FROM sessions
		WHERE universe = ? AND session_id > ? ORDER BY session_id LIMIT ?`, s.universe, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list sessions: %w", err)
	}
	return scanLifecycles(rows)
}

// Unfinished implements store.SessionLog.
func (s *Store) Unfinished(ctx context.Context) ([]string, error) {
	return s.queryStrings(ctx, "unfinished sessions",
		`SELECT session_id FROM sessions WHERE universe = ? AND has_unfinished = 1 ORDER BY session_id`, s.universe)
}

// Roots returns the sorted digests the session's events reference.
func (s *Store) Roots(ctx context.Context, sessionID string) ([]content.Digest, error) {
	strs, err := s.queryStrings(ctx, "roots of "+sessionID,
		`SELECT digest FROM session_roots WHERE universe = ? AND session_id = ? ORDER BY digest`, s.universe, sessionID)
	if err != nil {
		return nil, err
	}
	if len(strs) == 0 {
		if _, err := s.Session(ctx, sessionID); err != nil {
			return nil, err
		}
	}
	return parseDigests(strs)
}

func (s *Store) queryStrings(ctx context.Context, what, query string, args ...any) ([]string, error) {
	rows, err := s.reads.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", what, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", what, err)
	}
	return out, nil
}

// digestsJSON encodes digests as a JSON array of their string forms, the
// one bound parameter json_each() expands in SQL.
func digestsJSON(ds []content.Digest) (string, error) {
	raw, err := json.Marshal(ds)
	if err != nil {
		return "", fmt.Errorf("sqlite: encode digests: %w", err)
	}
	return string(raw), nil
}

func parseDigests(strs []string) ([]content.Digest, error) {
	out := make([]content.Digest, len(strs))
	for i, str := range strs {
		d, err := content.ParseDigest(str)
		if err != nil {
			return nil, fmt.Errorf("sqlite: stored digest: %w", err)
		}
		out[i] = d
	}
	return out, nil
}

// scanLifecycles reads the lifecycle column of a session listing.
func scanLifecycles(rows *sql.Rows) ([]core.Lifecycle, error) {
	defer rows.Close()
	var out []core.Lifecycle
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("sqlite: list sessions: %w", err)
		}
		var l core.Lifecycle
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("sqlite: list sessions: decode lifecycle: %w", err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list sessions: %w", err)
	}
	return out, nil
}
