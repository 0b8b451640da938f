package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// BenchmarkServeFirstDelta is the time from the provider's first byte of a
// streamed answer to the first delta at a client of the session stream,
// through `cairn serve` on loopback: the mean, median, 95th percentile
// and largest of 50 runs.
func BenchmarkServeFirstDelta(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "cairn")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/cairn").CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	var mu sync.Mutex
	var sent []time.Time
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		mu.Lock()
		sent = append(sent, time.Now())
		mu.Unlock()
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"First \"},\"finish_reason\":null}]}\n\n")
		w.(http.Flusher).Flush()
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"piece.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	b.Cleanup(fake.Close)
	dir := b.TempDir()
	cfg := filepath.Join(dir, "providers.json")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"providers":{"fake":{"baseUrl":%q,"stream":true}}}`, fake.URL+"/v1"), 0o600); err != nil {
		b.Fatal(err)
	}
	const runs = 50
	for range b.N {
		mu.Lock()
		sent = nil
		mu.Unlock()
		srv := startServeBin(b, bin, []string{"--data", filepath.Join(dir, fmt.Sprint(time.Now().UnixNano())), "--config", cfg})
		c := srv.client()
		ctx, cancel := context.WithCancel(context.Background())
		s, err := c.CreateSession(ctx, api.CreateSessionParams{Model: core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "m"}})
		if err != nil {
			b.Fatal(err)
		}
		firsts := make(chan time.Time, runs)
		seen := map[string]bool{}
		go func() {
			_ = c.Stream(ctx, s.SessionID, 0, func(se api.StreamEvent) error {
				if d := se.Delta; d != nil && !seen[d.RunID] {
					seen[d.RunID] = true
					firsts <- time.Now()
				}
				return nil
			})
		}()
		time.Sleep(100 * time.Millisecond) // the stream is open before the first run
		var got []time.Time
		var head int64
		for range runs {
			run, err := c.StartRun(ctx, api.RunStartParams{SessionID: s.SessionID, Input: textInput("Go.")})
			if err != nil {
				b.Fatal(err)
			}
			select {
			case t := <-firsts:
				got = append(got, t)
			case <-time.After(30 * time.Second):
				b.Fatal(errors.New("no delta reached the client"))
			}
			waitCompleted(b, c, s.SessionID, run.RunID, &head)
		}
		cancel()
		stopServer(b, srv)
		mu.Lock()
		var total time.Duration
		var each []time.Duration
		for i, t := range got {
			d := t.Sub(sent[i])
			total += d
			each = append(each, d)
		}
		mu.Unlock()
		slices.Sort(each)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(float64(total.Microseconds())/float64(len(got))/1000, "first-delta-ms-mean")
		b.ReportMetric(ms(each[len(each)/2]), "first-delta-ms-p50")
		b.ReportMetric(ms(each[len(each)*95/100]), "first-delta-ms-p95")
		b.ReportMetric(ms(each[len(each)-1]), "first-delta-ms-max")
	}
}
