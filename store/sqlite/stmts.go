package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// maxStmts bounds a cache. Every statement of this package has one of a
// few fixed texts; SQL beyond the bound (a caller building text from data,
// say) runs unprepared rather than growing the cache without end.
const maxStmts = 128

// stmtCache holds the prepared statements of one *sql.DB, keyed by their SQL
// text, from first use until Close.
//
// Running SQL text through *sql.DB or *sql.Tx makes the driver parse and
// plan it (sqlite3_prepare_v2) on every call, then finalize it. A *sql.Stmt
// is parsed once per pool connection; the driver then only binds, steps and
// resets it.
//
// A statement is prepared the first time it runs outside a transaction. A
// transaction does not prepare one on its pool (the pool may have no other
// connection to prepare it on), so it runs a statement not yet prepared
// as text and leaves the text in want; prepareWanted, called once the
// transaction has ended, prepares it for the next one. (The writer's
// connection keeps its own statements: writeConn.)
//
// Whenever no prepared statement is at hand (the cache closed or full, a
// prepare failed), the SQL runs as text through the pool, as it always did,
// and so fails with the same errors: a closed database, a cancelled context.
type stmtCache struct {
	db *sql.DB

	mu     sync.RWMutex
	closed bool
	stmts  map[string]*sql.Stmt
	want   map[string]bool
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, stmts: map[string]*sql.Stmt{}, want: map[string]bool{}}
}

// lookup returns the statement prepared for query, or nil.
func (c *stmtCache) lookup(query string) *sql.Stmt {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.stmts[query]
}

// prepared returns the statement for query, preparing it on first use; nil
// when there is none to use. It must not be called inside a transaction
// of c.db. The lock is not held while preparing, which waits for a
// connection.
func (c *stmtCache) prepared(ctx context.Context, query string) *sql.Stmt {
	if st := c.lookup(query); st != nil {
		return st
	}
	c.mu.RLock()
	skip := c.closed || len(c.stmts) >= maxStmts
	c.mu.RUnlock()
	if skip {
		return nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil // the caller runs the text and meets the error, if it lasts
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(c.stmts) >= maxStmts {
		_ = st.Close()
		return nil
	}
	if won := c.stmts[query]; won != nil { // prepared meanwhile by another caller
		_ = st.Close()
		return won
	}
	c.stmts[query] = st
	return st
}

// ExecContext is db.ExecContext through the prepared statement.
func (c *stmtCache) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := c.prepared(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return c.db.ExecContext(ctx, query, args...)
}

// QueryContext is db.QueryContext through the prepared statement.
func (c *stmtCache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := c.prepared(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return c.db.QueryContext(ctx, query, args...)
}

// QueryRowContext is db.QueryRowContext through the prepared statement,
// for a read of one row by its key. It runs to its end once begun: the
// caller's context is checked first, not watched (whole). database/sql
// watches a cancellable context with a goroutine for each query, and a
// cold session's first turn reads one blob for each of its entries:
// 20,000 goroutines at 10,000 turns.
func (c *stmtCache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	quiet, err := whole(ctx)
	if err != nil {
		return c.db.QueryRowContext(ctx, query, args...) // fails with the context's error
	}
	return c.scanRow(quiet, query, args...)
}

// ScanTotals is QueryRowContext for a row of totals over a whole table:
// such a read may run long, so a cancelled context stops it midway.
func (c *stmtCache) ScanTotals(ctx context.Context, query string, args ...any) *sql.Row {
	return c.scanRow(ctx, query, args...)
}

func (c *stmtCache) scanRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := c.prepared(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.db.QueryRowContext(ctx, query, args...)
}

// inTx returns the statement prepared for query, or nil after noting that
// query is wanted. For use inside a transaction.
func (c *stmtCache) inTx(query string) *sql.Stmt {
	if st := c.lookup(query); st != nil {
		return st
	}
	c.mu.Lock()
	if !c.closed && len(c.stmts)+len(c.want) < maxStmts {
		c.want[query] = true
	}
	c.mu.Unlock()
	return nil
}

// prepareWanted prepares the statements transactions ran as text. Call it
// after a transaction of c.db has ended, never inside one.
func (c *stmtCache) prepareWanted(ctx context.Context) {
	c.mu.Lock()
	if len(c.want) == 0 {
		c.mu.Unlock()
		return
	}
	queries := make([]string, 0, len(c.want))
	for q := range c.want {
		queries = append(queries, q)
	}
	clear(c.want)
	c.mu.Unlock()
	for _, q := range queries {
		c.prepared(ctx, q) // a failure leaves q to be wanted again
	}
}

// tx wraps a transaction of c.db (the reader's, today) so its statements
// come from c.
func (c *stmtCache) tx(tx *sql.Tx) poolTx { return poolTx{Tx: tx, stmts: c} }

// close closes every statement; later calls run their SQL as text, through
// a pool that is closed too by then.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var first error
	for q, st := range c.stmts {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
		delete(c.stmts, q)
	}
	clear(c.want)
	return first
}

// poolTx is a transaction of a pool whose statements come from the pool's
// cache: Tx.StmtContext binds a prepared statement to the
// transaction's connection, where it is already prepared (or is prepared
// once more, if the pool replaced that connection). The bound statement
// closes with the transaction; the prepared one stays in the cache.
//
// A statement of the cache must not run again inside the transaction while
// rows it returned are open: the two would share one SQLite statement.
// Every caller here reads its rows to the end, or closes them, first.
type poolTx struct {
	*sql.Tx
	stmts *stmtCache
}

// ExecContext is tx.ExecContext through the prepared statement.
func (t poolTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.stmts.inTx(query); st != nil {
		return t.Tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

// QueryContext is tx.QueryContext through the prepared statement.
func (t poolTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.stmts.inTx(query); st != nil {
		return t.Tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, query, args...)
}

// QueryRowContext is tx.QueryRowContext through the prepared statement.
func (t poolTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.stmts.inTx(query); st != nil {
		return t.Tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, query, args...)
}

// stmtTx is the write transaction on the writer's connection (writeConn):
// its statements are the connection's prepared ones, and each runs to its
// end once started (run).
type stmtTx struct{ w *writeConn }

// whole is the context a write transaction's statement runs under, to its
// end once started, or the caller's error when it is done already (the
// driver would watch a cancellable context with a goroutine of its own for
// every statement).
func whole(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

// ExecContext runs query in the transaction.
func (t stmtTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx, err := whole(ctx)
	if err != nil {
		return nil, err
	}
	return t.w.exec(ctx, query, args...)
}

// QueryContext runs query in the transaction.
func (t stmtTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx, err := whole(ctx)
	if err != nil {
		return nil, err
	}
	return t.w.query(ctx, query, args...)
}

// QueryRowContext runs query in the transaction.
func (t stmtTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if c, err := whole(ctx); err == nil {
		ctx = c
	} // else the done context fails the query, as it would have
	return t.w.queryRow(ctx, query, args...)
}

// PrepareContext returns the transaction's prepared statement for query:
// for a statement run many times in one transaction.
func (t stmtTx) PrepareContext(ctx context.Context, query string) (txStmt, error) {
	ctx, err := whole(ctx)
	if err != nil {
		return txStmt{}, err
	}
	st, err := t.w.stmt(ctx, query)
	switch {
	case err != nil:
		return txStmt{}, err
	case st == nil:
		st, err = t.w.conn.PrepareContext(ctx, query)
		return txStmt{st: st, owned: true}, err
	}
	return txStmt{st: st}, nil
}

// txStmt is a statement of the write transaction, run as its statements
// are.
type txStmt struct {
	st    *sql.Stmt
	owned bool // prepared for this transaction only, past the cache's bound
}

// ExecContext runs the statement once.
func (s txStmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	ctx, err := whole(ctx)
	if err != nil {
		return nil, err
	}
	return s.st.ExecContext(ctx, args...)
}

// Close releases the statement, unless the connection's cache keeps it.
func (s txStmt) Close() error {
	if !s.owned {
		return nil
	}
	return s.st.Close()
}
