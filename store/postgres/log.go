package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// Append implements store.SessionLog. One transaction holds the session
// row's lock, the head check, a key-share lock on every referenced blob row,
// the events, the roots and the projection, so it commits whole or not at
// all.
//
// Appends are the hot path and bound by round trips plus the commit's
// fsync, so the transaction travels in two pipelined batches: BEGIN with the
// locks and checks, then the writes with COMMIT. Two round trips whatever
// the number of events; a rejected append costs a third, its ROLLBACK.
func (s *Store) Append(ctx context.Context, sessionID string, expectedHead int64, proposals []core.Proposal) ([]core.Event, error) {
	return s.AppendBatch(ctx, sessionID, expectedHead, proposals, store.Batch{})
}

// AppendBatch implements store.BatchAppender: Append, with b's inline blobs
// stored in the first batch (before the locks that check the events'
// refs, so the events may name them) and its edges in the second. A blob
// too large to be inline is put before the transaction, as WriteBatch
// does. A rejected append stores none of the inline blobs and no edge.
func (s *Store) AppendBatch(ctx context.Context, sessionID string, expectedHead int64, proposals []core.Proposal, b store.Batch) ([]core.Event, error) {
	refs, err := store.PrepareAppend(sessionID, expectedHead, proposals)
	if err != nil {
		return nil, err
	}
	batch, err := s.prepareBatch(ctx, b)
	if err != nil {
		return nil, err
	}
	events := store.Commit(expectedHead, proposals)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: append %s: %w", sessionID, err)
	}
	// Release closes, rather than pools, a connection left inside a
	// transaction, so no path below can leak an open one to the next user.
	defer conn.Release()
	life, err := s.lockForAppend(ctx, conn, sessionID, expectedHead, events, refs, batch)
	if err == nil {
		err = s.writeAppend(ctx, conn, sessionID, expectedHead, events, digestArgs(refs), life, batch.edges)
	}
	if err != nil {
		rollback(ctx, conn)
		return nil, err
	}
	return events, nil
}

// rollback ends the transaction a failed append left open, if any.
func rollback(ctx context.Context, conn *pgxpool.Conn) {
	if conn.Conn().PgConn().TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, _ = conn.Exec(ctx, `ROLLBACK`) // on failure Release drops the connection
}

// lockForAppend begins the transaction, takes the session's row lock
// (creating the row at head 0), stores the batch's inline blobs, checks the
// head, and key-share locks the blobs the events and the batch's edges
// name: a collector's DELETE of one of them now waits for this
// transaction, then fails on a foreign key. It returns the projection
// after events.
func (s *Store) lockForAppend(ctx context.Context, conn *pgxpool.Conn, sessionID string, expectedHead int64,
	events []core.Event, refs []content.Digest, batch preparedBatch) (core.Lifecycle, error) {
	life := core.Lifecycle{SessionID: sessionID}
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	if expectedHead == 0 {
		// Insert the finished row directly. ON CONFLICT DO NOTHING waits for
		// a concurrent creator's transaction and then inserts nothing, so a
		// lost creation race is a head conflict, never a unique violation.
		life = store.Project(life, sessionID, events)
		raw, err := json.Marshal(life)
		if err != nil {
			return life, fmt.Errorf("postgres: append %s: encode lifecycle: %w", sessionID, err)
		}
		b.Queue(`INSERT INTO sessions
			(universe, session_id, head, status, has_unfinished, created_at_ms, updated_at_ms, lifecycle)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (universe, session_id) DO NOTHING
			RETURNING head`,
			s.universe, sessionID, life.Head, life.Status, life.Unfinished(), life.CreatedAtMs, life.UpdatedAtMs, raw)
	} else {
		b.Queue(`SELECT head, lifecycle FROM sessions WHERE universe = $1 AND session_id = $2 FOR UPDATE`,
			s.universe, sessionID)
	}
	// After the session's lock, so appends to one session queue there
	// before they touch any blob row.
	now := s.now()
	for _, bl := range batch.inline {
		data := bl.data
		if data == nil {
			data = []byte{} // nil would bind as NULL, which means "not inline"
		}
		b.Queue(putInlineSQL, s.universe, bl.d[:], len(data), data, now)
	}
	locks := refs
	if len(batch.edges) > 0 {
		locks = append(slices.Clone(refs), batch.needs()...)
		content.SortDigests(locks)
		locks = slices.Compact(locks)
	}
	if len(locks) > 0 {
		b.Queue(lockBlobsSQL, s.universe, digestArgs(locks))
	}
	br := conn.SendBatch(ctx, b)
	_, err := br.Exec() // BEGIN
	var head int64
	var created bool
	if err == nil {
		head, created, err = readHead(br, expectedHead, &life)
	}
	for i := 0; err == nil && i < len(batch.inline); i++ {
		if _, err = br.Exec(); err != nil {
			err = fmt.Errorf("put blob %s: %w", batch.inline[i].d, err)
		}
	}
	var found [][]byte
	if err == nil && len(locks) > 0 {
		found, err = collectBytes(br)
	}
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return life, fmt.Errorf("postgres: append %s: %w", sessionID, err)
	}

	if expectedHead == 0 && !created {
		// Someone created the session first; report the head it has now.
		if err := conn.QueryRow(ctx, `SELECT head FROM sessions WHERE universe = $1 AND session_id = $2`,
			s.universe, sessionID).Scan(&head); err != nil {
			return life, fmt.Errorf("postgres: append %s: read head: %w", sessionID, err)
		}
	}
	if head != expectedHead {
		return life, &store.HeadConflictError{SessionID: sessionID, Expected: expectedHead, Actual: head}
	}
	if missing := absent(locks, found); len(missing) > 0 {
		return life, &blob.MissingError{Digests: missing}
	}
	if expectedHead > 0 {
		life = store.Project(life, sessionID, events)
	}
	return life, nil
}

// readHead reads the first result of the lock batch: for a new session
// whether this transaction created the row, else the locked row's head and
// projection (head 0 when the session does not exist).
func readHead(br pgx.BatchResults, expectedHead int64, life *core.Lifecycle) (head int64, created bool, err error) {
	if expectedHead == 0 {
		err := br.QueryRow().Scan(&head)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("create session: %w", err)
		}
		return 0, true, nil // the head before this append
	}
	var raw []byte
	err = br.QueryRow().Scan(&head, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("lock session: %w", err)
	}
	if err := json.Unmarshal(raw, life); err != nil {
		return 0, false, fmt.Errorf("decode lifecycle: %w", err)
	}
	return head, false, nil
}

// writeAppend writes the edges, the events, the roots and (for an
// existing session) the projection, and commits, in one pipelined batch.
func (s *Store) writeAppend(ctx context.Context, conn *pgxpool.Conn, sessionID string, expectedHead int64,
	events []core.Event, digests [][]byte, life core.Lifecycle, edges []preparedEdge) error {
	cols := eventColumns(events)
	b := &pgx.Batch{}
	for _, e := range edges {
		if len(e.kids) > 0 {
			b.Queue(insertEdgesSQL, s.universe, e.parent[:], digestArgs(e.kids))
		}
	}
	b.Queue(insertEventsSQL, s.universe, sessionID, cols.seq, cols.at, cols.kind, cols.version, cols.jfrom, cols.njoins, cols.joins, cols.payload)
	if len(digests) > 0 {
		b.Queue(insertRootsSQL, s.universe, sessionID, digests)
	}
	if expectedHead > 0 {
		raw, err := json.Marshal(life)
		if err != nil {
			return fmt.Errorf("postgres: append %s: encode lifecycle: %w", sessionID, err)
		}
		b.Queue(`UPDATE sessions SET head = $3, status = $4, has_unfinished = $5,
				created_at_ms = $6, updated_at_ms = $7, lifecycle = $8
			WHERE universe = $1 AND session_id = $2`,
			s.universe, sessionID, life.Head, life.Status, life.Unfinished(), life.CreatedAtMs, life.UpdatedAtMs, raw)
	}
	b.Queue(`COMMIT`)
	// For WaitAppend's listeners (long-polling readers), in a transaction of
	// its own: a NOTIFY inside the append's would hold PostgreSQL's global
	// notify lock across that commit, and appends of every session would
	// commit one at a time.
	b.Queue(`SELECT pg_notify($1, $2)`, appendsChannel, appendsKey(s.universe, sessionID))
	br := conn.SendBatch(ctx, b)
	commitAt := b.Len() - 2 // the last statement is the notify
	var tag pgconn.CommandTag
	var err error
	for i := range commitAt + 1 {
		t, e := br.Exec()
		if e != nil {
			err = e
			break
		}
		if i == commitAt {
			tag = t
		}
	}
	// The events are committed (or not) by now: a notify that fails only
	// leaves a long-poll to its timeout, so its error is not the append's.
	_ = br.Close()
	if err != nil {
		return fmt.Errorf("postgres: append %s: write: %w", sessionID, err)
	}
	// COMMIT of a transaction that failed reports ROLLBACK, not an error.
	if tag.String() != "COMMIT" {
		return fmt.Errorf("postgres: append %s: commit: transaction rolled back (%s)", sessionID, tag)
	}
	return nil
}

// insertEventsSQL inserts any number of events in one statement: parallel
// arrays (eventColumns) unnested into rows. Joins differ in length per
// event, so they travel flattened, each event carrying its slice's start
// and length (-1 for NULL).
const insertEventsSQL = `INSERT INTO events (universe, session_id, seq, observed_at_ms, kind, version, joins, payload)
	SELECT $1, $2, e.seq, e.at, e.kind, e.version,
		CASE WHEN e.njoins < 0 THEN NULL ELSE ($9::text[])[e.jfrom : e.jfrom + e.njoins - 1] END,
		e.payload
	FROM unnest($3::bigint[], $4::bigint[], $5::text[], $6::bigint[], $7::int[], $8::int[], $10::bytea[])
		AS e (seq, at, kind, version, jfrom, njoins, payload)`

// insertRootsSQL records digests as a session's roots.
const insertRootsSQL = `INSERT INTO session_roots (universe, session_id, digest)
	SELECT $1, $2, unnest($3::bytea[]) ON CONFLICT DO NOTHING`

// lockBlobsSQL key-share locks the referenced blobs that exist: a
// collector's DELETE of one of them waits for the transaction, then fails
// on the roots' foreign key. Sorted, so concurrent lockers meet the rows in
// the same order.
const lockBlobsSQL = `SELECT digest FROM blobs WHERE universe = $1 AND digest = ANY ($2::bytea[])
	ORDER BY digest FOR KEY SHARE`

// eventArrays holds events column by column, the shape unnest() takes.
type eventArrays struct {
	seq, at, version []int64
	kind             []string
	jfrom, njoins    []int32
	joins            []string
	payload          [][]byte
}

func eventColumns(events []core.Event) eventArrays {
	n := len(events)
	c := eventArrays{
		seq: make([]int64, n), at: make([]int64, n), version: make([]int64, n), kind: make([]string, n),
		jfrom: make([]int32, n), njoins: make([]int32, n), joins: []string{}, payload: make([][]byte, n),
	}
	for i, ev := range events {
		c.seq[i], c.at[i], c.version[i], c.kind[i], c.payload[i] = ev.Seq, ev.ObservedAtMs, int64(ev.Version), ev.Kind, ev.Payload
		c.jfrom[i] = int32(len(c.joins) + 1) // SQL arrays count from 1
		if ev.Joins == nil {
			c.njoins[i] = -1
		} else {
			c.njoins[i] = int32(len(ev.Joins))
			c.joins = append(c.joins, ev.Joins...)
		}
	}
	return c
}

// ReadAfter implements store.SessionLog.
func (s *Store) ReadAfter(ctx context.Context, sessionID string, after int64, limit int) ([]core.Event, error) {
	return s.readEffective(ctx, sessionID, after, limit, false)
}

// ReadBefore implements store.SessionLog: the newest events below before,
// returned oldest first.
func (s *Store) ReadBefore(ctx context.Context, sessionID string, before int64, limit int) ([]core.Event, error) {
	return s.readEffective(ctx, sessionID, before, limit, true)
}

// readEffective reads a session's effective log after (or, backward,
// before) bound. One round trip asks for the session's layout and its own
// events in range together; that answers every read of an ordinary session
// and of a fork's own events, and a read reaching into a fork's inherited
// prefix then reads it through its sources.
func (s *Store) readEffective(ctx context.Context, sessionID string, bound int64, limit int, backward bool) ([]core.Event, error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT fork_at, fork_depth, fork_segments FROM sessions WHERE universe = $1 AND session_id = $2`, s.universe, sessionID)
	from, to := bound, int64(-1)
	if backward {
		from, to = 0, max(bound-1, 0)
	}
	s.queueRange(b, sessionID, from, to, limit, backward)
	br := s.pool.SendBatch(ctx, b)
	var lay store.Layout
	var segs []byte
	err := br.QueryRow().Scan(&lay.ForkAt, &lay.Depth, &segs)
	found := err == nil
	if errors.Is(err, pgx.ErrNoRows) {
		err = nil
	}
	var own []core.Event
	if err == nil {
		own, err = collectEvents(br)
	}
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("postgres: read %s: %w", sessionID, err)
	case !found:
		return nil, fmt.Errorf("%w: %s", store.ErrSessionNotFound, sessionID)
	}
	if segs != nil {
		if err := json.Unmarshal(segs, &lay.Inherited); err != nil {
			return nil, fmt.Errorf("postgres: read %s: decode fork segments: %w", sessionID, err)
		}
	}
	reachesPrefix := len(lay.Inherited) > 0 && (!backward && bound < lay.ForkAt || backward && (limit <= 0 || len(own) < limit) && bound-1 > 0)
	if reachesPrefix {
		if backward {
			return lay.ReadBefore(ctx, sessionID, bound, limit, s.readRange)
		}
		return lay.ReadAfter(ctx, sessionID, bound, limit, s.readRange)
	}
	if backward {
		slices.Reverse(own)
	}
	return own, nil
}

// readRange is the store.RangeReader of the events table.
func (s *Store) readRange(ctx context.Context, owner string, from, to int64, limit int, desc bool) ([]core.Event, error) {
	b := &pgx.Batch{}
	s.queueRange(b, owner, from, to, limit, desc)
	br := s.pool.SendBatch(ctx, b)
	evs, err := collectEvents(br)
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: read %s: %w", owner, err)
	}
	return evs, nil
}

// queueRange queues the read of owner's stored events with seqs in (from,
// to] (to < 0: unbounded), ascending or descending, up to limit (<= 0: all).
func (s *Store) queueRange(b *pgx.Batch, owner string, from, to int64, limit int, desc bool) {
	var lim *int64 // LIMIT NULL is no limit
	if limit > 0 {
		l := int64(limit)
		lim = &l
	}
	if to < 0 {
		to = math.MaxInt64
	}
	order := "ASC"
	if desc {
		order = "DESC"
	}
	b.Queue(`SELECT seq, observed_at_ms, kind, version, joins, payload
		FROM events WHERE universe = $1 AND session_id = $2 AND seq > $3 AND seq <= $4 ORDER BY seq `+order+` LIMIT $5`,
		s.universe, owner, from, to, lim)
}

func collectEvents(br pgx.BatchResults) ([]core.Event, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (core.Event, error) {
		var ev core.Event
		var payload []byte
		err := r.Scan(&ev.Seq, &ev.ObservedAtMs, &ev.Kind, &ev.Version, &ev.Joins, &payload)
		ev.Payload = payload
		return ev, err
	})
	if evs == nil {
		evs = []core.Event{}
	}
	return evs, err
}

// Session implements store.SessionLog.
func (s *Store) Session(ctx context.Context, sessionID string) (core.Lifecycle, error) {
	var raw []byte
	err := s.pool.QueryRow(ctx, `SELECT lifecycle FROM sessions WHERE universe = $1 AND session_id = $2`,
		s.universe, sessionID).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return core.Lifecycle{}, fmt.Errorf("%w: %s", store.ErrSessionNotFound, sessionID)
	}
	if err != nil {
		return core.Lifecycle{}, fmt.Errorf("postgres: session %s: %w", sessionID, err)
	}
	var l core.Lifecycle
	if err := json.Unmarshal(raw, &l); err != nil {
		return core.Lifecycle{}, fmt.Errorf("postgres: session %s: decode lifecycle: %w", sessionID, err)
	}
	return l, nil
}

// Sessions implements store.SessionLog.
func (s *Store) Sessions(ctx context.Context, afterID string, limit int) ([]core.Lifecycle, error) {
	var lim *int64
	if limit > 0 {
		l := int64(limit)
		lim = &l
	}
	rows, err := s.pool.Query(ctx, `SELECT lifecycle FROM sessions
		WHERE universe = $1 AND session_id > $2 ORDER BY session_id LIMIT $3`, s.universe, afterID, lim)
	if err != nil {
		return nil, fmt.Errorf("postgres: list sessions: %w", err)
	}
	return collectLifecycles(rows)
}

// Unfinished implements store.SessionLog.
func (s *Store) Unfinished(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT session_id FROM sessions
		WHERE universe = $1 AND has_unfinished ORDER BY session_id`, s.universe)
	if err != nil {
		return nil, fmt.Errorf("postgres: unfinished sessions: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: unfinished sessions: %w", err)
	}
	return ids, nil
}

// Roots returns the sorted digests the session's events reference.
func (s *Store) Roots(ctx context.Context, sessionID string) ([]content.Digest, error) {
	rows, err := s.pool.Query(ctx, `SELECT digest FROM session_roots
		WHERE universe = $1 AND session_id = $2 ORDER BY digest`, s.universe, sessionID)
	if err != nil {
		return nil, fmt.Errorf("postgres: roots of %s: %w", sessionID, err)
	}
	raw, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("postgres: roots of %s: %w", sessionID, err)
	}
	if len(raw) == 0 {
		if _, err := s.Session(ctx, sessionID); err != nil {
			return nil, err
		}
	}
	return parseDigests(raw)
}

// collectLifecycles reads the lifecycle column of a session listing.
func collectLifecycles(rows pgx.Rows) ([]core.Lifecycle, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (core.Lifecycle, error) {
		var raw []byte
		var l core.Lifecycle
		if err := r.Scan(&raw); err != nil {
			return l, err
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			return l, fmt.Errorf("decode lifecycle: %w", err)
		}
		return l, nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list sessions: %w", err)
	}
	return out, nil
}
