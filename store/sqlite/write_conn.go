package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// writeConn is the writer pool's one connection, held from Open to Close.
// Every write goes through it, one at a time (mu), and a write transaction
// is BEGIN IMMEDIATE … COMMIT run as statements on it.
//
// database/sql's own transaction starts a goroutine to watch it, and one
// more for each query in it (its context is always cancellable); a turn
// of a chat runs two transactions and a dozen statements, so that was a
// dozen goroutines started, and as many idle threads woken, a turn.
// Statements prepared on the connection and run under a context that
// cannot be cancelled start none. The caller's context is checked before
// each statement instead (whole), and a transaction still rolls back
// when one fails.
type writeConn struct {
	mu     sync.Mutex // held through a transaction, or one statement outside one
	conn   *sql.Conn
	stmts  map[string]*sql.Stmt // prepared on conn, by SQL text
	closed bool
}

// errWriterClosed is what a write meets after Close, in the words of a
// closed pool.
var errWriterClosed = errors.New("database is closed")

func newWriteConn(ctx context.Context, db *sql.DB) (*writeConn, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return &writeConn{conn: conn, stmts: map[string]*sql.Stmt{}}, nil
}

// stmt returns the statement prepared for query, or nil once maxStmts
// texts are: the caller then runs the text through conn. Call with mu
// held.
func (w *writeConn) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if w.closed {
		return nil, errWriterClosed
	}
	if st := w.stmts[query]; st != nil {
		return st, nil
	}
	if len(w.stmts) >= maxStmts {
		return nil, nil
	}
	st, err := w.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	w.stmts[query] = st
	return st, nil
}

// exec runs query once; call with mu held.
func (w *writeConn) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := w.stmt(ctx, query)
	switch {
	case err != nil:
		return nil, err
	case st == nil:
		return w.conn.ExecContext(ctx, query, args...)
	}
	return st.ExecContext(ctx, args...)
}

// query runs query for rows; call with mu held.
func (w *writeConn) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := w.stmt(ctx, query)
	switch {
	case err != nil:
		return nil, err
	case st == nil:
		return w.conn.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// queryRow runs query for one row; call with mu held. A statement that
// does not prepare runs as text, which fails with the same error (a
// *sql.Row cannot carry one otherwise).
func (w *writeConn) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st, err := w.stmt(ctx, query); err == nil && st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return w.conn.QueryRowContext(ctx, query, args...)
}

// ExecContext runs one write statement outside a transaction.
func (w *writeConn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	quiet, err := whole(ctx)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.exec(quiet, query, args...)
}

// scanRow runs one write statement that returns a row (RETURNING)
// outside a transaction, and scans the row into dest before another write
// may use the connection: until its rows are closed, the statement holds
// the connection's implicit transaction open.
func (w *writeConn) scanRow(ctx context.Context, query string, args []any, dest ...any) error {
	quiet, err := whole(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errWriterClosed
	}
	return w.queryRow(quiet, query, args...).Scan(dest...)
}

// transact runs fn inside BEGIN IMMEDIATE … COMMIT, and rolls back when
// fn fails (or panics) or the commit does. A transaction that has begun
// runs to its end: fn's statements check the caller's context (stmtTx),
// the transaction's own do not.
func (w *writeConn) transact(ctx context.Context, fn func(tx stmtTx) error) (err error) {
	quiet, err := whole(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.exec(quiet, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			// After a failed COMMIT SQLite may have rolled back already;
			// the error that says so is not news.
			_, _ = w.exec(quiet, "ROLLBACK")
		}
	}()
	if err := fn(stmtTx{w: w}); err != nil {
		return err
	}
	if _, err := w.exec(quiet, "COMMIT"); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	committed = true
	return nil
}

// close closes the statements and gives the connection back to its pool;
// later writes fail.
func (w *writeConn) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	var errs []error
	for q, st := range w.stmts {
		errs = append(errs, st.Close())
		delete(w.stmts, q)
	}
	errs = append(errs, w.conn.Close())
	return errors.Join(errs...)
}
