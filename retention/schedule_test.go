package retention_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/store"
)

// catalog is a Collectable whose every scan returns one unheld row (a
// fresh digest each time) and records when it ran; block, when set, makes
// scans wait for their context.
type catalog struct {
	mu    sync.Mutex
	scans []time.Time
	n     int
	block bool
}

func (c *catalog) ScanBlobs(ctx context.Context, after store.BlobCursor, cutoff time.Time, limit int) ([]store.CatalogRow, error) {
	c.mu.Lock()
	c.scans = append(c.scans, time.Now())
	c.n++
	n, block := c.n, c.block
	c.mu.Unlock()
	if block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return []store.CatalogRow{{Digest: content.Sum([]byte{byte(n)}), Size: 1, TouchedAt: cutoff.Add(-time.Hour)}}, nil
}

func (c *catalog) DeleteDeadBlobs(_ context.Context, ds []content.Digest, _ time.Time) ([]store.DeletedBlob, error) {
	out := make([]store.DeletedBlob, len(ds))
	for i, d := range ds {
		out[i] = store.DeletedBlob{Digest: d, Size: 1}
	}
	return out, nil
}

func (c *catalog) DeleteObject(context.Context, string) error { return nil }

func (c *catalog) LoadBlobCursor(context.Context) (store.BlobCursor, error) {
	return store.BlobCursor{}, nil
}

func (c *catalog) SaveBlobCursor(context.Context, store.BlobCursor) error { return nil }

func (c *catalog) scanTimes() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.scans...)
}

// run starts c.Run and returns a stop that cancels it and fails the test
// unless Run returns promptly.
func run(t *testing.T, c *retention.Collector, interval time.Duration) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, interval, retention.Options{Grace: time.Minute})
	}()
	return func() {
		t.Helper()
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return after its context was cancelled")
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRunCollectsAfterEachIntervalAndLogs(t *testing.T) {
	cat := &catalog{}
	var logs testenv.Buffer
	c := &retention.Collector{Universes: retention.Single("u", cat), Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	const interval = 40 * time.Millisecond
	start := time.Now()
	stop := run(t, c, interval)
	waitFor(t, "three passes", func() bool { return len(cat.scanTimes()) >= 3 })
	stop()
	scans := cat.scanTimes()
	if first := scans[0].Sub(start); first < interval {
		t.Errorf("first pass %v after the start; want one interval (%v) later", first, interval)
	}
	for i := 1; i < len(scans); i++ {
		if gap := scans[i].Sub(scans[i-1]); gap < interval {
			t.Errorf("pass %d started %v after the previous one; want at least %v", i, gap, interval)
		}
	}
	waitFor(t, "the pass log", func() bool { return strings.Contains(logs.String(), "retention: pass") })
	if l := logs.String(); !strings.Contains(l, "deleted=1") || !strings.Contains(l, "scanned=1") {
		t.Errorf("pass log lacks its stats:\n%s", l)
	}
	n := len(cat.scanTimes())
	time.Sleep(3 * interval)
	if got := len(cat.scanTimes()); got != n {
		t.Errorf("%d passes ran after Run returned", got-n)
	}
}

func TestRunStopsDuringAPass(t *testing.T) {
	cat := &catalog{block: true}
	stop := run(t, &retention.Collector{Universes: retention.Single("u", cat)}, time.Millisecond)
	waitFor(t, "a pass to start", func() bool { return len(cat.scanTimes()) > 0 })
	stop() // fails unless the blocked pass gives up with the context
}

func TestRunRetriesAfterAFailedPass(t *testing.T) {
	cat := &catalog{}
	var calls atomic.Int64
	var logs testenv.Buffer
	c := &retention.Collector{
		Universes: func(ctx context.Context) ([]retention.Universe, error) {
			if calls.Add(1) == 1 {
				return nil, errors.New("database unreachable")
			}
			return []retention.Universe{{Name: "u", Store: cat}}, nil
		},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	}
	stop := run(t, c, 10*time.Millisecond)
	waitFor(t, "a pass after the failed one", func() bool { return len(cat.scanTimes()) > 0 })
	stop()
	if !strings.Contains(logs.String(), "database unreachable") {
		t.Errorf("the failure was not logged:\n%s", logs.String())
	}
}

// follower never leads.
type follower struct{ asked atomic.Int64 }

func (f *follower) Lead(context.Context) (bool, error) { f.asked.Add(1); return false, nil }

func TestRunFollowerAsksEachPassAndCollectsNothing(t *testing.T) {
	cat := &catalog{}
	f := &follower{}
	stop := run(t, &retention.Collector{Universes: retention.Single("u", cat), Leader: f}, 10*time.Millisecond)
	waitFor(t, "three elections", func() bool { return f.asked.Load() >= 3 })
	stop()
	if n := len(cat.scanTimes()); n != 0 {
		t.Fatalf("a follower scanned %d times", n)
	}
}

func TestRunZeroIntervalRunsNothing(t *testing.T) {
	cat := &catalog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&retention.Collector{Universes: retention.Single("u", cat)}).Run(context.Background(), 0, retention.Options{})
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run with a zero interval did not return")
	}
	if n := len(cat.scanTimes()); n != 0 {
		t.Fatalf("%d passes ran", n)
	}
}
