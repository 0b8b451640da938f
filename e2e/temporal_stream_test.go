package e2e

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// On Temporal the worker reads the provider's stream and the gateway
// serves the client: the pieces of the answer reach a client of the
// gateway while the provider still writes, a client that connects in the
// middle gets the answer so far, and the committed answer is whole.
func TestE2E_TemporalStreamsDeltasToTheGatewaysClients(t *testing.T) {
	fake := newFakeChat(t, fakeKey)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	fake.srv.Config.Handler = heldStream(release, "Streams ", "cross processes.", "") // no usage, as Ollama
	d := newTemporalDeployment(t, fake)
	metricsAddr := freeAddr(t)
	d.startWorker(t, "worker-1", cairnBin, "--metrics-listen", metricsAddr)
	if status, body := probe(t, d.srv.addr, "/readyz"); status != 200 || checksOf(body) != "store=ok temporal=ok" {
		t.Fatalf("/readyz of the gateway: %d %v", status, body)
	}
	c := d.client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	created, err := c.CreateSession(ctx, api.CreateSessionParams{Model: fakeModel()})
	if err != nil {
		t.Fatal(err)
	}
	sid := created.SessionID

	// watch follows the session's stream and reports its deltas' text and
	// whether the answer was committed.
	type watcher struct {
		deltas            chan string
		opened, committed chan struct{}
	}
	watch := func() watcher {
		w := watcher{deltas: make(chan string, 100), opened: make(chan struct{}), committed: make(chan struct{})}
		var seen sync.Once
		go func() {
			_ = c.Stream(ctx, sid, 0, func(ev api.StreamEvent) error {
				if ev.Committed != nil {
					seen.Do(func() { close(w.opened) }) // the server flushes its first events once it watches deltas
				}
				switch {
				case ev.Delta != nil:
					w.deltas <- ev.Delta.Text
				case ev.Committed != nil && ev.Committed.Kind == core.KindRunCompleted:
					close(w.committed)
					return io.EOF
				}
				return nil
			})
		}()
		return w
	}
	first := watch()
	select {
	case <-first.opened:
	case <-time.After(60 * time.Second):
		t.Fatal("the stream never opened")
	}
	run, err := c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: textInput("Say something.")})
	if err != nil {
		t.Fatal(err)
	}
	next := func(w watcher, want string) {
		t.Helper()
		select {
		case got := <-w.deltas:
			if got != want {
				t.Fatalf("delta %q, want %q", got, want)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("no delta %q", want)
		}
	}
	next(first, "Streams ") // while the provider holds the rest
	late := watch()
	next(late, "Streams ") // the answer so far, to a client that came in the middle
	once.Do(func() { close(release) })
	next(first, "cross processes.")
	for _, w := range []watcher{first, late} {
		select {
		case <-w.committed:
		case <-time.After(60 * time.Second):
			t.Fatal("the run never completed")
		}
	}
	if got := waitRun(t, c, sid, run.RunID); got.Output == nil || got.Output.VisibleText() != "Streams cross processes." {
		t.Fatalf("run = %s", mustJSON(t, got))
	}
	// The worker made the provider call and appended the run's end: its
	// metrics, on their own listener, count both.
	status, text := scrape(t, metricsAddr, "")
	if status != 200 || !strings.Contains(text, `cairn_provider_request_seconds_count{api_kind="chat_completions",provider="fake"} 1`) ||
		!strings.Contains(text, `cairn_runs_total{status="completed"} 1`) {
		t.Fatalf("the worker's /metrics: %d\n%s", status, text)
	}
}
