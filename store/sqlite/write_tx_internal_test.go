package sqlite

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// A write transaction whose caller gives up stops before its next
// statement and rolls back what it had done.
func TestWriteTransactionStopsBetweenStatementsOnceCancelled(t *testing.T) {
	s := openTest(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	err := s.writeTx(ctx, func(tx stmtTx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO retention_cursors (universe, touched_at_ms, digest) VALUES ('u1', 1, 'd')`); err != nil {
			return err
		}
		cancel()
		_, err := tx.ExecContext(ctx, `INSERT INTO retention_cursors (universe, touched_at_ms, digest) VALUES ('u2', 1, 'd')`)
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("writeTx after the caller cancelled = %v, want context.Canceled", err)
	}
	var n int
	if err := s.reader.QueryRow(`SELECT count(*) FROM retention_cursors`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d cursor rows (%v) after the rolled-back transaction, want 0", n, err)
	}
	if err := s.writeTx(ctx, func(stmtTx) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("writeTx with a done context = %v, want context.Canceled", err)
	}
}

// A write transaction starts no goroutine, however many statements it
// runs: database/sql watches each transaction's context with one, and
// the driver each statement's, which a turn (two appends of a dozen
// statements) paid for in threads woken.
func TestWriteTransactionsStartNoGoroutine(t *testing.T) {
	s := openTest(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background()) // as a host's
	defer cancel()
	opened := []core.Proposal{{ObservedAtMs: 1, Kind: core.KindSessionOpened, Version: core.EventVersion, Payload: []byte(`{"sessionId":"s1"}`)}}
	if _, err := s.AppendBatch(ctx, "s1", 0, opened, store.Batch{}); err != nil { // the first prepares the statements
		t.Fatal(err)
	}
	var ps []core.Proposal
	for i := range 200 {
		ps = append(ps, core.Proposal{ObservedAtMs: 2, Kind: "test.note", Version: core.EventVersion, Payload: fmt.Appendf(nil, `{"n":%d}`, i)})
	}
	before := goroutinesCreated()
	d, err := s.Put(ctx, []byte("an answer"))
	if err != nil {
		t.Fatal(err)
	}
	ps = append(ps, core.Proposal{ObservedAtMs: 3, Kind: "test.refs", Version: core.EventVersion, Payload: []byte(`{}`), Refs: []content.Digest{d}})
	if _, err := s.AppendBatch(ctx, "s1", 1, ps, store.Batch{Blobs: [][]byte{[]byte("a request's segments")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Touch(ctx, []content.Digest{d}); err != nil {
		t.Fatal(err)
	}
	if n := goroutinesCreated() - before; n > 0 {
		t.Fatalf("a put, an append of 201 events and a touch started %d goroutines, want none", n)
	}
}

// A one-row read starts no goroutine either, under a cancellable context:
// a cold session's first turn reads a blob for each of its entries.
func TestOneRowReadsStartNoGoroutine(t *testing.T) {
	s := openTest(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background()) // as a request's
	defer cancel()
	d, err := s.Put(ctx, []byte("an entry"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, d); err != nil { // the first prepares the statement
		t.Fatal(err)
	}
	before := goroutinesCreated()
	for range 100 {
		if got, err := s.Get(ctx, d); err != nil || string(got) != "an entry" {
			t.Fatalf("get: %q, %v", got, err)
		}
	}
	if n := goroutinesCreated() - before; n > 0 {
		t.Fatalf("100 one-row reads started %d goroutines, want none", n)
	}
	cancel()
	if _, err := s.Get(ctx, d); !errors.Is(err, context.Canceled) {
		t.Fatalf("a read under a cancelled context: %v, want context.Canceled", err)
	}
}

// goroutinesCreated is how many goroutines the process has started, once
// the collector's mark workers (goroutines started by its first cycle)
// are.
func goroutinesCreated() uint64 {
	runtime.GC()
	m := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}

// Both pools keep temporary files, a statement's journal among them, in
// memory (temp_store 2): a write that records an index's edges journals
// tens of pages, and a file would cost a system call each.
func TestConnectionsKeepTemporaryFilesInMemory(t *testing.T) {
	s := openTest(t, t.TempDir())
	ctx := context.Background()
	var fromWriter int
	if err := s.writes.scanRow(ctx, `PRAGMA temp_store`, nil, &fromWriter); err != nil {
		t.Fatal(err)
	}
	var fromReader int
	if err := s.reader.QueryRow(`PRAGMA temp_store`).Scan(&fromReader); err != nil {
		t.Fatal(err)
	}
	if fromWriter != 2 || fromReader != 2 {
		t.Fatalf("temp_store: writer %d, reader %d; want 2 (memory) on both", fromWriter, fromReader)
	}
}
