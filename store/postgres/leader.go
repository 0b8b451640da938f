package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// LeaderLockKey is the session-level advisory lock that elects the blob
// collector among the processes sharing one database: the ASCII bytes
// "cairn-gc" as a bigint. Advisory locks are scoped to a database, so
// separate Cairn databases on one server elect separately. In pg_locks it
// shows as locktype 'advisory', classid 1667328370, objid 1848469347,
// objsubid 1.
const LeaderLockKey int64 = 0x63616972_6e2d6763

// leaderTimeout bounds each round trip of the election, so a hung network
// delays a pass instead of stalling it.
const leaderTimeout = 10 * time.Second

// Leader elects one collector through LeaderLockKey, held on a connection of
// its own outside the pool: a pooled connection would carry the lock back to
// the pool and into unrelated work. It implements retention.Leader and is
// safe for concurrent use.
//
// Leadership saves duplicate work; it is not what keeps data safe. Every
// delete re-checks the dead predicate, so a collector that lost its
// connection mid-universe and overlaps its successor deletes nothing live.
type Leader struct {
	db *DB

	mu   sync.Mutex
	conn *pgx.Conn // non-nil only while its session holds the lock
}

// Leader returns an elector over db's database. It connects on the first Lead.
func (db *DB) Leader() *Leader { return &Leader{db: db} }

// Lead reports whether this process leads. While it holds the lock it checks
// that its session is alive and still holds it; otherwise (never led, lost
// the connection) it tries the lock on a fresh connection, which fails as
// long as another session holds it.
func (l *Leader) Lead(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, leaderTimeout)
	defer cancel()
	if l.conn != nil {
		held, err := l.holds(ctx)
		if err == nil && held {
			return true, nil
		}
		// The session died or (unexpectedly) lost the lock: start over.
		l.drop()
		if ctx.Err() != nil {
			return false, fmt.Errorf("postgres: leader check: %w", ctx.Err())
		}
	}
	cfg := l.db.pool.Config().ConnConfig.Copy()
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		// Names the holder for operators looking at pg_stat_activity.
		cfg.RuntimeParams["application_name"] = "cairn collector"
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		msg := scrub(err, cfg.ConnString())
		if cfg.Password != "" {
			msg = strings.ReplaceAll(msg, cfg.Password, "xxxxx")
		}
		return false, fmt.Errorf("postgres: leader connection: %s", msg)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, LeaderLockKey).Scan(&ok); err != nil {
		closeQuietly(conn)
		return false, fmt.Errorf("postgres: try leader lock: %w", err)
	}
	if !ok {
		// Another session leads; followers keep no idle connection.
		closeQuietly(conn)
		return false, nil
	}
	l.conn = conn
	return true, nil
}

// holds asks the server whether the leader's session holds the lock; the
// round trip is also the liveness check.
func (l *Leader) holds(ctx context.Context) (bool, error) {
	var held bool
	err := l.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
		WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
		AND classid::bigint = $1 AND objid::bigint = $2 AND objsubid = 1)`,
		LeaderLockKey>>32, LeaderLockKey&0xffffffff).Scan(&held)
	return held, err
}

// drop closes the leader's connection without unlocking: the server releases
// the lock of a session that ends.
func (l *Leader) drop() {
	closeQuietly(l.conn)
	l.conn = nil
}

func closeQuietly(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// Close gives up leadership, if held, and closes the connection, so another
// process can lead at its next pass. The Leader may lead again afterwards.
func (l *Leader) Close(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, leaderTimeout)
	defer cancel()
	var released bool
	err := l.conn.QueryRow(ctx, `SELECT pg_advisory_unlock($1)`, LeaderLockKey).Scan(&released)
	if err == nil && !released {
		err = errors.New("the session did not hold the lock")
	}
	// Closing ends the session, which releases the lock even if the unlock failed.
	err = errors.Join(err, l.conn.Close(ctx))
	l.conn = nil
	if err != nil {
		return fmt.Errorf("postgres: release leader lock: %w", err)
	}
	return nil
}
