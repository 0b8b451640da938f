package local

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// fakeClock is a host clock the test moves.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// evictEnv is an env whose host has checkpoints, a fake clock, counting ids
// and the options mod sets; start says whether to Start it.
type evictEnv struct {
	*env
	clock *fakeClock
	logs  *testenv.Buffer
}

func newEvictEnv(t *testing.T, adapter *scriptAdapter, start bool, mod func(*Options), tools ...runtime.Tool) *evictEnv {
	t.Helper()
	blobs := blob.NewMemory()
	reg, err := runtime.NewTools(tools...)
	if err != nil {
		t.Fatal(err)
	}
	e := &evictEnv{env: &env{t: t, blobs: blobs, log: store.NewMemory(blobs), adapter: adapter, tools: reg}, clock: &fakeClock{}, logs: &testenv.Buffer{}}
	e.clock.ms.Store(1_700_000_000_000)
	e.host = e.newHost(e.log, start, mod)
	return e
}

// newHost builds a host over log and the env's blobs.
func (e *evictEnv) newHost(log *store.Memory, start bool, mod func(*Options)) *Host {
	e.t.Helper()
	var ids atomic.Int64
	o := Options{
		Log: log, Blobs: e.blobs, Checkpoints: log,
		Executor: &runtime.Executor{Blobs: e.blobs, Adapters: map[string]provider.Adapter{core.APIChatCompletions: e.adapter}, Tools: e.tools, Files: log},
		Logger:   slog.New(slog.NewTextHandler(e.logs, nil)),
		Now:      e.clock.now,
		NewID:    func(prefix string) string { return fmt.Sprintf("%s%04d", prefix, ids.Add(1)) },
		Retry:    RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 50 * time.Millisecond},
	}
	if mod != nil {
		mod(&o)
	}
	h := New(o)
	// The tests set both bounds, and mean a 0 bound (keep no idle session)
	// where New reads 0 as the default.
	h.opt.MaxIdleSessions, h.opt.IdleTTL = o.MaxIdleSessions, o.IdleTTL
	if start {
		if err := h.Start(context.Background()); err != nil {
			e.t.Fatal(err)
		}
	}
	e.t.Cleanup(h.Close)
	return h
}

func bound(n int, ttl time.Duration) func(*Options) {
	return func(o *Options) { o.MaxIdleSessions, o.IdleTTL = n, ttl }
}

func answering(text string) *scriptAdapter {
	return &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		return answer(ctx, b, text)
	}}
}

// loadedSet lists which of ids are loaded.
func loadedSet(h *Host, ids ...string) []string {
	var out []string
	for _, id := range ids {
		if h.IsLoaded(id) {
			out = append(out, id)
		}
	}
	return out
}

// sweepUntil sweeps until the loaded sessions among all are want. A load
// beyond the bound also kicks the host's own sweeper, whose sweep may hold
// a session while the test's looks at it (the test's then passes it by),
// so one sweep of the test's need not have reached the end state yet.
func sweepUntil(t *testing.T, h *Host, want string, all ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		h.Sweep()
		got := fmt.Sprint(loadedSet(h, all...))
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("loaded %v, want %v", got, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// Beyond MaxIdleSessions, the least recently used idle sessions go first; a
// use (here an Inspect) makes a session the most recent again.
func TestEvict_IdleSessionsBeyondTheBoundLeastRecentlyUsedFirst(t *testing.T) {
	e := newEvictEnv(t, answering("ok"), true, bound(2, -1))
	all := []string{"s1", "s2", "s3", "s4", "s5", "s6"}
	for _, id := range all[:5] {
		e.create(id)
	}
	sweepUntil(t, e.host, "[s4 s5]", all...)
	if err := e.host.Inspect(context.Background(), "s2", func(*core.State) {}); err != nil {
		t.Fatal(err)
	}
	sweepUntil(t, e.host, "[s2 s5]", all...)
	if err := e.host.Inspect(context.Background(), "s5", func(*core.State) {}); err != nil {
		t.Fatal(err)
	}
	e.create("s6")
	sweepUntil(t, e.host, "[s5 s6]", all...)
	if n := e.host.Loaded(); n != 2 {
		t.Fatalf("after using s5 and creating s6: %d loaded, want 2", n)
	}
}

// InspectLive answers only for a session the host holds: it never loads
// one, and its reads are not uses, so they neither renew a session's
// IdleTTL nor move it in the LRU order.
func TestInspectLive_NeitherLoadsNorKeepsASession(t *testing.T) {
	e := newEvictEnv(t, answering("ok"), true, bound(-1, time.Minute))
	e.create("a")
	var head int64
	if !e.host.InspectLive("a", func(st *core.State) { head = st.Head }) || head == 0 {
		t.Fatalf("a session just created: InspectLive saw head %d", head)
	}
	e.clock.advance(40 * time.Second)
	if !e.host.InspectLive("a", func(*core.State) {}) {
		t.Fatal("InspectLive missed a loaded session")
	}
	e.clock.advance(30 * time.Second)
	if n := e.host.Sweep(); n != 1 || e.host.IsLoaded("a") {
		t.Fatalf("evicted %d: a session read through InspectLive 30s ago and unused for 70s stayed loaded", n)
	}
	if e.host.InspectLive("a", func(*core.State) { t.Error("fn ran for an evicted session") }) {
		t.Fatal("InspectLive answered for an evicted session")
	}
	if e.host.InspectLive("nope", func(*core.State) { t.Error("fn ran for an unknown session") }) {
		t.Fatal("InspectLive answered for an unknown session")
	}
	if e.host.Loaded() != 0 {
		t.Fatalf("InspectLive loaded %d sessions", e.host.Loaded())
	}
}

// IdleTTL drops the sessions unused for that long by the host clock.
func TestEvict_IdleTTLByTheHostClock(t *testing.T) {
	e := newEvictEnv(t, answering("ok"), true, bound(-1, time.Minute))
	e.create("a")
	e.create("b")
	e.clock.advance(30 * time.Second)
	if err := e.host.Inspect(context.Background(), "a", func(*core.State) {}); err != nil {
		t.Fatal(err)
	}
	e.clock.advance(40 * time.Second)
	if n := e.host.Sweep(); n != 1 || fmt.Sprint(loadedSet(e.host, "a", "b")) != "[a]" {
		t.Fatalf("evicted %d, loaded %v; want b (unused 70s) gone, a (40s) kept", n, loadedSet(e.host, "a", "b"))
	}
	e.clock.advance(20 * time.Second)
	if n := e.host.Sweep(); n != 1 || e.host.Loaded() != 0 {
		t.Fatalf("evicted %d, %d still loaded", n, e.host.Loaded())
	}
}

// A session with an in-flight model call and a queued run stays loaded
// whatever the policy says; once its runs finish it goes, and reloads with
// both runs completed.
func TestEvict_NeverASessionWithWorkInFlight(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		if n == 0 {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done(): // the host closes after a failure
				return provider.Output{}, ctx.Err()
			}
		}
		return answer(ctx, b, "done")
	}}
	e := newEvictEnv(t, adapter, true, bound(0, time.Second))
	e.create("busy")
	e.create("idle")
	first := e.startRun("busy", "one")
	<-entered
	second := e.startRun("busy", "two") // queued behind the first
	e.clock.advance(time.Hour)
	e.host.Sweep()
	if got := loadedSet(e.host, "busy", "idle"); fmt.Sprint(got) != "[busy]" {
		t.Fatalf("loaded %v, want only the busy session", got)
	}
	close(release)
	if r := e.waitRun("busy", second); r.Status != core.StatusCompleted {
		t.Fatalf("second run %s", r.Status)
	}
	e.clock.advance(time.Hour)
	if e.host.Sweep(); e.host.Loaded() != 0 {
		t.Fatalf("%d sessions loaded after their runs finished", e.host.Loaded())
	}
	if r := e.waitRun("busy", first); r.Status != core.StatusCompleted {
		t.Fatalf("first run after reload %s", r.Status)
	}
}

// A session whose state has an active and a queued run stays loaded even
// with nothing in flight (here: loaded by a host that was not started, so
// nothing pumps it), and so does one a caller holds.
func TestEvict_NeverAnActiveOrHeldSession(t *testing.T) {
	entered := make(chan struct{}, 1)
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return provider.Output{}, ctx.Err()
	}}
	e := newEvictEnv(t, adapter, true, bound(-1, -1))
	e.create("active")
	e.create("held")
	e.startRun("active", "one")
	<-entered
	e.startRun("active", "two")
	e.host.Close()

	h := e.newHost(e.log, false, bound(0, time.Nanosecond))
	e.clock.advance(time.Hour)
	var active string
	var queued int
	if err := h.Inspect(context.Background(), "active", func(s *core.State) { active, queued = s.Active, len(s.Queue) }); err != nil {
		t.Fatal(err)
	}
	if active == "" || queued != 1 {
		t.Fatalf("active %q, queued %d", active, queued)
	}
	rel, err := h.Hold(context.Background(), "held")
	if err != nil {
		t.Fatal(err)
	}
	e.clock.advance(time.Hour)
	if n := h.Sweep(); n != 0 || h.Loaded() != 2 {
		t.Fatalf("evicted %d; %d loaded", n, h.Loaded())
	}
	// Inside Inspect the caller holds it and its lock.
	if err := h.Inspect(context.Background(), "held", func(*core.State) {
		if n := h.Sweep(); n != 0 {
			t.Errorf("evicted %d sessions from inside Inspect", n)
		}
	}); err != nil {
		t.Fatal(err)
	}
	rel()
	if n := h.Sweep(); n != 1 || fmt.Sprint(loadedSet(h, "active", "held")) != "[active]" {
		t.Fatalf("after the release: evicted %d, loaded %v", n, loadedSet(h, "active", "held"))
	}
}

// A long-polling reader waiting on a session that is evicted wakes, and
// Changed then reloads the session at the same head.
func TestEvict_WakesLongPollingReaders(t *testing.T) {
	e := newEvictEnv(t, answering("ok"), true, bound(0, -1))
	e.create("s1")
	head, changed, err := e.host.Changed(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	e.host.Sweep()
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter was not woken by the eviction")
	}
	again, _, err := e.host.Changed(context.Background(), "s1")
	if err != nil || again != head {
		t.Fatalf("head after reload %d, %v; want %d", again, err, head)
	}
}

// A host that evicts its sessions after every step ends with the same log
// and state as one that never does, with and without checkpoints.
func TestEvict_ReloadIsTransparent(t *testing.T) {
	script := func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		if n%2 == 0 {
			return callTools(ctx, b, "echo")
		}
		return answer(ctx, b, fmt.Sprintf("answer %d", n))
	}
	echo := funcTool{"echo", func(context.Context) (runtime.ToolOutput, error) {
		return runtime.ToolOutput{Content: []byte("echoed")}, nil
	}}
	play := func(t *testing.T, mod func(*Options), evict bool) ([]core.Event, []byte) {
		e := newEvictEnv(t, &scriptAdapter{fn: script}, true, mod, echo)
		e.create("s1", "echo")
		for i := range 4 {
			run := e.waitRun("s1", e.startRun("s1", fmt.Sprintf("run %d", i)))
			if run.Status != core.StatusCompleted {
				t.Fatalf("run %d %s", i, run.Status)
			}
			if evict {
				if e.host.Sweep(); e.host.IsLoaded("s1") {
					t.Fatal("the idle session was not evicted")
				}
			}
		}
		var live []byte
		if err := e.host.Inspect(context.Background(), "s1", func(s *core.State) {
			var err error
			if live, err = core.EncodeCheckpoint(s); err != nil {
				t.Fatal(err)
			}
		}); err != nil {
			t.Fatal(err)
		}
		return e.events("s1"), live
	}
	wantEvents, want := play(t, bound(-1, -1), false)
	replayed, err := core.Replay(wantEvents)
	if err != nil {
		t.Fatal(err)
	}
	if enc, _ := core.EncodeCheckpoint(replayed); !bytes.Equal(enc, want) {
		t.Fatal("the never-evicting host's state differs from its log's replay")
	}
	for _, tc := range []struct {
		name string
		mod  func(*Options)
	}{
		{"checkpoints", bound(0, -1)},
		{"replay", func(o *Options) { bound(0, -1)(o); o.Checkpoints = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gotEvents, got := play(t, tc.mod, true)
			if len(gotEvents) != len(wantEvents) {
				t.Fatalf("%d events, want %d", len(gotEvents), len(wantEvents))
			}
			for i := range gotEvents {
				g, w := gotEvents[i], wantEvents[i]
				if g.Seq != w.Seq || g.Kind != w.Kind || g.ObservedAtMs != w.ObservedAtMs || !bytes.Equal(g.Payload, w.Payload) {
					t.Fatalf("event %d: %s %s, want %s %s", i, g.Kind, g.Payload, w.Kind, w.Payload)
				}
			}
			if !bytes.Equal(got, want) {
				t.Fatal("the final state differs from the never-evicting host's")
			}
		})
	}
}

// Many goroutines submit runs to, inspect and long-poll more sessions than
// the bound while sweeps run: no call fails, no append conflicts, every run
// completes, every live state is its log's replay, and in the end no more
// than the bound stay loaded.
func TestEvict_ConcurrentStress(t *testing.T) {
	const sessions, workers, ops, maxIdle = 12, 6, 40, 3
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		if n%3 == 0 {
			return callTools(ctx, b, "echo")
		}
		return answer(ctx, b, "ok")
	}}
	echo := funcTool{"echo", func(context.Context) (runtime.ToolOutput, error) {
		return runtime.ToolOutput{Content: []byte("echoed")}, nil
	}}
	e := newEvictEnv(t, adapter, true, bound(maxIdle, time.Second), echo)
	var ids []string
	for i := range sessions {
		ids = append(ids, fmt.Sprintf("s%02d", i))
		e.create(ids[i], "echo")
	}
	ctx := context.Background()
	var mu sync.Mutex
	runs := map[string][]string{}
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	item, err := runtime.TextInput(ctx, e.blobs, "go")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var sweeps sync.WaitGroup
	evicted := 0
	sweeps.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			e.clock.advance(300 * time.Millisecond)
			evicted += e.host.Sweep()
			time.Sleep(100 * time.Microsecond)
		}
	})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range ops {
				id := ids[rng.IntN(sessions)]
				switch rng.IntN(3) {
				case 0:
					runID := e.host.NewID("run_")
					if _, err := e.host.Submit(ctx, id, core.StartRun{AtMs: 1, RunID: runID, Input: []core.InputItem{item}}); err != nil {
						fail("submit to %s: %v", id, err)
						continue
					}
					mu.Lock()
					runs[id] = append(runs[id], runID)
					mu.Unlock()
				case 1:
					if err := e.host.Inspect(ctx, id, func(s *core.State) { _ = s.Head }); err != nil {
						fail("inspect %s: %v", id, err)
					}
				case 2:
					_, changed, err := e.host.Changed(ctx, id)
					if err != nil {
						fail("changed %s: %v", id, err)
						continue
					}
					select {
					case <-changed:
					case <-time.After(2 * time.Millisecond):
					}
				}
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		for _, runID := range runs[id] {
			if r := e.waitRun(id, runID); r.Status != core.StatusCompleted {
				fail("run %s of %s %s", runID, id, r.Status)
			}
		}
	}
	close(stop)
	sweeps.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d failures, first: %s", len(failures), failures[0])
	}
	if evicted == 0 {
		t.Fatal("the sweeps evicted nothing")
	}
	t.Logf("%d evictions by the test's sweeps", evicted)
	for _, id := range ids {
		evs := e.events(id)
		replayed, err := core.Replay(evs)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := core.EncodeCheckpoint(replayed)
		var live []byte
		if err := e.host.Inspect(ctx, id, func(s *core.State) { live, _ = core.EncodeCheckpoint(s) }); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(live, want) {
			t.Fatalf("%s: the live state is not its log's replay", id)
		}
		if n := countKinds(evs)[core.KindRunCompleted]; n != len(runs[id]) {
			t.Fatalf("%s: %d runs completed, %d submitted", id, n, len(runs[id]))
		}
	}
	e.host.Sweep()
	if n := e.host.Loaded(); n > maxIdle {
		t.Fatalf("%d sessions loaded, bound %d", n, maxIdle)
	}
	if out := e.logs.String(); strings.Contains(out, "level=ERROR") || strings.Contains(out, "conflict") {
		t.Fatalf("host errors: %s", out)
	}
}

// gatedLog holds the first ReadAfter after arm, once it has read, until
// the gate opens or its caller's context ends: a slow load, whose reads
// are stale by the time it ends.
type gatedLog struct {
	store.SessionLog
	armed   atomic.Bool
	entered chan struct{}
	gate    chan struct{}
}

func (l *gatedLog) ReadAfter(ctx context.Context, id string, after int64, limit int) ([]core.Event, error) {
	evs, err := l.SessionLog.ReadAfter(ctx, id, after, limit)
	if l.armed.CompareAndSwap(true, false) {
		close(l.entered)
		select {
		case <-l.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return evs, err
}

// While a load of an evicted session is slow, a second caller waits for it
// instead of loading a copy of its own, which could run, be evicted and
// leave the slow load's stale copy as the session. If the slow load fails
// (its caller gave up), the waiter loads the session itself.
func TestEvict_OneLoadAtATime(t *testing.T) {
	for _, giveUp := range []bool{false, true} {
		t.Run(fmt.Sprintf("giveUp=%v", giveUp), func(t *testing.T) {
			var gated *gatedLog
			e := newEvictEnv(t, answering("ok"), true, func(o *Options) {
				bound(0, -1)(o)
				gated = &gatedLog{SessionLog: o.Log, entered: make(chan struct{}), gate: make(chan struct{})}
				o.Log = gated
			})
			e.create("s1")
			if e.host.Sweep(); e.host.Loaded() != 0 {
				t.Fatal("not evicted")
			}
			gated.armed.Store(true)
			slowCtx, giveUpNow := context.WithCancel(context.Background())
			slow := make(chan error, 1)
			go func() { slow <- e.host.Inspect(slowCtx, "s1", func(*core.State) {}) }()
			<-gated.entered
			submitted := make(chan string, 1)
			go func() { submitted <- e.startRun("s1", "go") }()
			time.Sleep(50 * time.Millisecond) // a second copy would have run the run by now,
			e.host.Sweep()                    // and would go here
			if giveUp {
				giveUpNow()
			} else {
				close(gated.gate)
			}
			if err := <-slow; (err != nil) != giveUp {
				t.Fatalf("slow load: %v", err)
			}
			runID := <-submitted
			if r := e.waitRun("s1", runID); r.Status != core.StatusCompleted {
				t.Fatalf("run %s", r.Status)
			}
			e.host.Sweep()
			// Any stale copy would fail this run's appends.
			if r := e.waitRun("s1", e.startRun("s1", "again")); r.Status != core.StatusCompleted {
				t.Fatalf("second run %s", r.Status)
			}
			replayed, err := core.Replay(e.events("s1"))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := core.EncodeCheckpoint(replayed)
			var live []byte
			if err := e.host.Inspect(context.Background(), "s1", func(s *core.State) { live, _ = core.EncodeCheckpoint(s) }); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(live, want) {
				t.Fatal("the live state is not its log's replay")
			}
			if out := e.logs.String(); strings.Contains(out, "level=ERROR") {
				t.Fatalf("host errors: %s", out)
			}
			giveUpNow()
		})
	}
}
