package sqlite

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"testing"

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

// An append's statements do not each start a goroutine: the driver
// watches a cancellable context with one per statement, and an append
// runs a statement per event.
func TestAppendStartsNoGoroutinePerStatement(t *testing.T) {
	s := openTest(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background()) // as a host's
	defer cancel()
	ps := []core.Proposal{{ObservedAtMs: 1, Kind: core.KindSessionOpened, Version: core.EventVersion, Payload: []byte(`{"sessionId":"s1"}`)}}
	for i := range 200 {
		ps = append(ps, core.Proposal{ObservedAtMs: 2, Kind: "test.note", Version: core.EventVersion, Payload: fmt.Appendf(nil, `{"n":%d}`, i)})
	}
	created := func() uint64 {
		m := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
		metrics.Read(m)
		return m[0].Value.Uint64()
	}
	before := created()
	if _, err := s.AppendBatch(ctx, "s1", 0, ps, store.Batch{}); err != nil {
		t.Fatal(err)
	}
	if n := created() - before; n > 20 {
		t.Fatalf("appending 201 events started %d goroutines, want a few for the transaction", n)
	}
}
