// Package local is the embedded host: it drives every session with work
// in-process, through the same core, loop (runtime.Pump) and executors as
// the Temporal host. What is its own: goroutines, locks, retry timers and
// which sessions it keeps in memory.
package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// Options configure a Host.
type Options struct {
	Log      store.SessionLog
	Blobs    blob.Store
	Executor *runtime.Executor
	Logger   *slog.Logger
	// Now is the host's clock; commands carry its readings into the core.
	Now func() time.Time
	// NewID returns a fresh id with the given prefix (run_, st_, s_).
	NewID func(prefix string) string
	// Retry governs retryable provider errors.
	Retry RetryPolicy
	// Checkpoints stores reducer checkpoints (nil: none). The host loads a
	// session from its latest checkpoint and the events after it, and
	// writes one when CheckpointPolicy says so after its commits.
	Checkpoints      store.Checkpoints
	CheckpointPolicy runtime.CheckpointPolicy
	// MaxIdleSessions bounds the idle sessions kept in memory (default
	// 1024; negative: no bound); IdleTTL drops an idle session unused for
	// longer (default 10 minutes; negative: never). See evict.go.
	MaxIdleSessions int
	IdleTTL         time.Duration
	// Observer hears the events the host commits (nil: nobody).
	Observer runtime.Observer
}

// RetryPolicy bounds retries of retryable provider errors (see
// runtime.ProviderRetry); its delays also pace re-admissions of results the
// store could not take.
type RetryPolicy struct {
	Budget      time.Duration // time from the first attempt; default runtime.DefaultRetryBudget
	MaxAttempts int           // including the first; 0: bounded by Budget only
	BaseDelay   time.Duration // default 500ms, doubled per attempt
	MaxDelay    time.Duration // default 30s
}

func (p RetryPolicy) provider() runtime.ProviderRetry {
	return runtime.ProviderRetry{Budget: p.Budget, BaseDelay: p.BaseDelay, MaxDelay: p.MaxDelay}
}

// Host drives sessions. It is safe for concurrent use.
type Host struct {
	opt    Options
	ctx    context.Context // cancelled by Close: stops all work
	cancel context.CancelFunc
	work   sync.WaitGroup

	// queuedRuns counts the runs queued in the sessions in memory.
	queuedRuns atomic.Int64

	mu       sync.Mutex
	sessions map[string]*session
	uses     uint64            // counts session uses: the LRU clock
	kick     chan struct{}     // asks the sweeper for a sweep now
	deltas   *runtime.DeltaHub // pieces of streaming generations, for watchers
}

// New returns a host; call Start before use.
func New(opt Options) *Host {
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.NewID == nil {
		opt.NewID = runtime.RandomID
	}
	if opt.Retry.BaseDelay <= 0 {
		opt.Retry.BaseDelay = 500 * time.Millisecond
	}
	if opt.Retry.MaxDelay <= 0 {
		opt.Retry.MaxDelay = 30 * time.Second
	}
	if opt.MaxIdleSessions == 0 {
		opt.MaxIdleSessions = DefaultMaxIdleSessions
	}
	if opt.IdleTTL == 0 {
		opt.IdleTTL = DefaultIdleTTL
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Host{opt: opt, ctx: ctx, cancel: cancel, sessions: map[string]*session{}, kick: make(chan struct{}, 1), deltas: runtime.NewDeltaHub()}
	if opt.Executor != nil && opt.Executor.Children == nil {
		opt.Executor.Children = h // its agent_run calls start sessions of this host
	}
	if opt.Executor != nil && opt.Executor.OnDelta == nil {
		opt.Executor.OnDelta = h.deltas.Publish // streamed answers reach this host's watchers
	}
	return h
}

// Start stores the constant blobs, resumes every session whose last run is
// unfinished, from its log, and starts evicting idle sessions.
func (h *Host) Start(ctx context.Context) error {
	for _, b := range core.ConstantBlobs() {
		if _, err := h.opt.Blobs.Put(ctx, b); err != nil {
			return fmt.Errorf("storing constant blobs: %w", err)
		}
	}
	ids, err := h.opt.Log.Unfinished(ctx)
	if err != nil {
		return fmt.Errorf("listing unfinished sessions: %w", err)
	}
	for _, id := range ids {
		if err := h.Resume(ctx, id); err != nil {
			return err
		}
	}
	h.work.Add(1)
	go h.sweeper()
	return nil
}

// Resume loads a session from its log and drives the work it left
// unfinished: what Start does for each such session, and what an import
// asks for a session it wrote.
func (h *Host) Resume(ctx context.Context, sessionID string) error {
	s, err := h.session(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("resuming session %s: %w", sessionID, err)
	}
	h.opt.Logger.Info("resuming session", "session", sessionID)
	s.mu.Lock()
	h.pump(s)
	s.mu.Unlock()
	h.release(s)
	return nil
}

// Close cancels all in-flight work and waits for it to stop.
func (h *Host) Close() {
	h.cancel()
	h.work.Wait()
}

func (h *Host) nowMs() int64 { return h.opt.Now().UnixMilli() }

// NewID returns a fresh id from the host's id source.
func (h *Host) NewID(prefix string) string { return h.opt.NewID(prefix) }

// NowMs is the host clock in milliseconds, for commands built by callers.
func (h *Host) NowMs() int64 { return h.nowMs() }

// Blobs is the host's content store.
func (h *Host) Blobs() blob.Store { return h.opt.Blobs }

// Files is the host's workspace store (nil if it has none).
func (h *Host) Files() runtime.Files { return h.opt.Executor.Files }

// Log is the host's session log.
func (h *Host) Log() store.SessionLog { return h.opt.Log }

// Checkpoints is the host's checkpoint store (nil if it has none).
func (h *Host) Checkpoints() store.Checkpoints { return h.opt.Checkpoints }

// ErrHostClosed is returned once Close has been called.
var ErrHostClosed = errors.New("host is closed")

// WatchDeltas returns the pieces of the session's generation in flight so
// far, a channel of the ones that follow, and the function that stops
// the watch.
func (h *Host) WatchDeltas(sessionID string) ([]runtime.GenerationDelta, <-chan runtime.GenerationDelta, func()) {
	return h.deltas.Watch(sessionID)
}

// Load is how many sessions the host holds in memory, and how many runs
// wait in their queues.
func (h *Host) Load() (sessions, queuedRuns int) {
	h.mu.Lock()
	sessions = len(h.sessions)
	h.mu.Unlock()
	return sessions, int(h.queuedRuns.Load())
}
