package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// BenchmarkServeManySessions runs CAIRN_BENCH_SESSIONS sessions (8) at
// once through one `cairn serve --data DIR`, each a chat of
// CAIRN_BENCH_TURNS short turns (200) driven by a client of its own, as
// people sharing one server drive it; the provider is the zero-latency
// fake on one host, as every session of a team shares its provider's. It
// reports the turns the server completes a second, its CPU a turn over all
// of them, the wall time of a turn as a client sees it (median and 99th
// percentile), the connections the provider was opened over, and the
// server's resident memory once every session is done.
//
//	CAIRN_BENCH_SESSIONS=16 go test -run '^$' -bench ServeManySessions -benchtime 1x ./e2e/
func BenchmarkServeManySessions(b *testing.B) { manySessions(b, false, false) }

// BenchmarkServeManySessionsPostgres is BenchmarkServeManySessions on the
// hosted store, as a team runs it: `cairn serve --postgres URL` (a fresh
// database, migrated, with one universe whose key every client sends).
func BenchmarkServeManySessionsPostgres(b *testing.B) { manySessions(b, true, false) }

// BenchmarkServeManySessionsTemporal is BenchmarkServeManySessionsPostgres
// with the sessions on Temporal: `cairn serve --temporal` as the gateway
// and one `cairn worker` (whose CPU is counted with the gateway's).
func BenchmarkServeManySessionsTemporal(b *testing.B) { manySessions(b, true, true) }

func manySessions(b *testing.B, hosted, onTemporal bool) {
	sessions := benchCount(b, "CAIRN_BENCH_SESSIONS", 8, 1)
	turns := benchCount(b, "CAIRN_BENCH_TURNS", 200, 10)
	bin := benchBinary(b)
	cfg, conns := fakeProvider(b, scenario{respond: func([]byte) string { return textResponse("chatcmpl-bench", "Noted.") }})
	for range b.N {
		where := &backing{data: filepath.Join(b.TempDir(), "data")}
		if hosted {
			where = hostedBacking(b, bin, onTemporal)
		}
		srv := where.serve(b, bin, cfg)
		ids := make([]string, sessions)
		for i := range ids {
			s, err := where.client(srv).CreateSession(context.Background(), api.CreateSessionParams{Model: core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "m"}})
			if err != nil {
				b.Fatal(err)
			}
			ids[i] = s.SessionID
		}
		opened := conns.Load()
		took := make([][]time.Duration, sessions)
		errs := make([]error, sessions)
		before := where.cpu(b, srv)
		start := time.Now()
		var wg sync.WaitGroup
		for i, id := range ids {
			// A client and connections of its own, as each person's
			// program has.
			c := api.NewClient(srv.addr, &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}).WithAPIKey(where.key)
			wg.Go(func() { took[i], errs[i] = chatTurns(c, id, turns) })
		}
		wg.Wait()
		wall := time.Since(start)
		cpu := where.cpu(b, srv) - before
		rss := processRSS(b, srv.cmd.Process.Pid)
		stopServer(b, srv)
		where.stopWorker(b)
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		all := slices.Sorted(slices.Values(slices.Concat(took...)))
		n := float64(len(all))
		b.ReportMetric(n/wall.Seconds(), "turns/s")
		b.ReportMetric(cpu.Seconds()*1000/n, "cpu-ms/turn")
		b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "turn-ms-p50")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "turn-ms-p99")
		b.ReportMetric(float64(conns.Load()-opened), "provider-conns")
		b.ReportMetric(float64(rss)/1e6, "rss-MB@end")
		b.Logf("%d sessions × %d turns in %v", sessions, turns, wall.Round(time.Millisecond))
	}
}

// chatTurns runs n short turns on the session, one after another, and
// returns each one's wall time.
func chatTurns(c *api.Client, sessionID string, n int) ([]time.Duration, error) {
	var head int64
	took := make([]time.Duration, 0, n)
	for turn := 1; turn <= n; turn++ {
		start := time.Now()
		run, err := c.StartRun(context.Background(), api.RunStartParams{SessionID: sessionID, Input: []api.InputPart{{Type: "text", Text: fmt.Sprintf("Turn %d: a short message, as people write them.", turn)}}})
		if err != nil {
			return nil, err
		}
		if err := runCompleted(c, sessionID, run.RunID, &head); err != nil {
			return nil, err
		}
		took = append(took, time.Since(start))
	}
	return took, nil
}
