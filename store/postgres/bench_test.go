package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairn-agents/cairn/blob/blobtest"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store/postgres"
)

// typicalProposal is a turn.generation_completed event asking for one tool
// call: about 300 bytes of payload, one blob ref (so the append locks a blob
// row and records a root), joins of a run and a turn. Same as sqlite's.
func typicalProposal(b *testing.B, s *postgres.Store) core.Proposal {
	b.Helper()
	d, err := s.Put(context.Background(), []byte(`{"version":"2.0"}`))
	if err != nil {
		b.Fatal(err)
	}
	const run = "run_0123456789abcdef"
	payload, err := json.Marshal(core.TurnGenerationCompleted{
		RunID: run, Turn: 3, Finish: "tool_calls",
		Usage:     core.Usage{InputTokens: 1834, OutputTokens: 27},
		ToolCalls: []core.ToolCall{{CallID: "call_Xk3vPq9sT2mWc8Lr", Name: "read_changelog", Arguments: content.ContentRef{Digest: d, MediaType: content.MediaJSON}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	return core.Proposal{ObservedAtMs: 1_700_000_000_000, Joins: []string{"run:" + run, "turn:" + run + "/3"},
		Kind: core.KindTurnGenerationCompleted, Version: core.EventVersion, Payload: payload, Refs: []content.Digest{d}}
}

// parallel runs b.N calls of op spread over workers goroutines and returns
// the first error. The timer covers exactly the calls.
func parallel(b *testing.B, workers int, op func(worker int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	b.ResetTimer()
	for w := range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := op(w); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkAppend appends batches of ~300-byte events, each goroutine to its
// own session, the way hosts drive independent sessions.
func BenchmarkAppend(b *testing.B) {
	for _, events := range []int{1, 16} {
		for _, sessions := range []int{1, 8} {
			b.Run(fmt.Sprintf("events=%d/sessions=%d", events, sessions), func(b *testing.B) {
				ctx := context.Background()
				db, _ := connect(b)
				s := openStore(b, db, "bench", nil)
				p := typicalProposal(b, s)
				props := make([]core.Proposal, events)
				for i := range props {
					props[i] = p
				}
				heads := make([]int64, sessions)
				for i := range heads {
					if _, err := s.Append(ctx, fmt.Sprint("s", i), 0, []core.Proposal{p}); err != nil {
						b.Fatal(err)
					}
					heads[i] = 1
				}
				b.ReportAllocs()
				err := parallel(b, sessions, func(w int) error {
					evs, err := s.Append(ctx, fmt.Sprint("s", w), heads[w], props)
					if err == nil && evs[0].Seq != heads[w]+1 {
						err = fmt.Errorf("append at %d committed from seq %d", heads[w], evs[0].Seq)
					}
					heads[w] += int64(events)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N*events)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
			})
		}
	}
}

// BenchmarkPlainInsert is the floor appends are measured against: one
// single-row INSERT of a ~300-byte value per commit into a trivial table, in
// the same database, with the same concurrency.
func BenchmarkPlainInsert(b *testing.B) {
	for _, conns := range []int{1, 8} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			ctx := context.Background()
			_, url := connect(b)
			pool, err := pgxpool.New(ctx, url)
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			if _, err := pool.Exec(ctx, `CREATE TABLE plain (id bigserial PRIMARY KEY, v bytea NOT NULL)`); err != nil {
				b.Fatal(err)
			}
			value := blobtest.Bytes(1, 300)
			b.ReportAllocs()
			err = parallel(b, conns, func(int) error {
				_, err := pool.Exec(ctx, `INSERT INTO plain (v) VALUES ($1)`, value)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}

var blobSizes = []struct {
	name string
	n    int
}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}}

// BenchmarkBlobPut stores new bytes every iteration: 1 KiB and 64 KiB inline,
// 1 MiB as an object in a local directory.
func BenchmarkBlobPut(b *testing.B) {
	for _, size := range blobSizes {
		b.Run("size="+size.name, func(b *testing.B) {
			ctx := context.Background()
			db, _ := connect(b)
			s := openStore(b, db, "bench", dirObjects(b))
			data := blobtest.Bytes(2, size.n)
			b.SetBytes(int64(size.n))
			b.ReportAllocs()
			var i uint64
			for b.Loop() {
				i++
				binary.LittleEndian.PutUint64(data, i) // new bytes, not a touch
				if _, err := s.Put(ctx, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBlobGet reads and verifies stored blobs, round robin over 16.
func BenchmarkBlobGet(b *testing.B) {
	for _, size := range blobSizes {
		b.Run("size="+size.name, func(b *testing.B) {
			ctx := context.Background()
			db, _ := connect(b)
			s := openStore(b, db, "bench", dirObjects(b))
			var ds []content.Digest
			for i := range 16 {
				d, err := s.Put(ctx, blobtest.Bytes(uint64(100+i), size.n))
				if err != nil {
					b.Fatal(err)
				}
				ds = append(ds, d)
			}
			b.SetBytes(int64(size.n))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := s.Get(ctx, ds[i%len(ds)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkSHA256_1MiB is the hashing floor every put and get pays.
func BenchmarkSHA256_1MiB(b *testing.B) {
	data := blobtest.Bytes(3, 1<<20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		sha256.Sum256(data)
	}
}
