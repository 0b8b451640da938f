package local

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// session is a loaded session: its drive, its in-flight work and a channel
// closed whenever new events commit (long-polling readers wait on it).
//
// h.sessions holds at most one session per id, and only the session in the
// map may append for its id: a session enters the map before it is loaded
// (or created), so a concurrent caller waits for that load instead of
// starting a second one, and it leaves the map only when evicted or
// deleted (evict.go).
type session struct {
	id string
	// loaded is closed once the session is loaded, or its load failed
	// (loadErr, set under h.mu; the session has then left the map).
	loaded  chan struct{}
	loadErr error

	// Guarded by h.mu: the eviction policy's bookkeeping.
	refs     int       // callers and host goroutines holding the session; > 0 pins it
	used     uint64    // h.uses at its last use: the LRU order
	lastUsed time.Time // host clock at its last use, for Options.IdleTTL

	mu       sync.Mutex
	drive    *core.Drive
	inflight *runtime.InFlight
	changed  chan struct{}
	// checkpointed is the session's latest checkpoint (seq 0: none known),
	// for the checkpoint policy and the next checkpoint's memo.
	checkpointed runtime.CheckpointMark
	// held is the queue of commands waiting for a pending compaction to
	// end, in arrival order (see awaitCompaction); heldMoved is closed
	// whenever its front leaves.
	held      []*heldCommand
	heldMoved chan struct{}
	// queued is the session's queued runs at its last commit, its share
	// of Host.queuedRuns (guarded by mu).
	queued int
	// recent is the tail of the log this host committed (see remember).
	recent atomic.Pointer[[]core.Event]
	// brought are the blobs (and edges) of the command being admitted,
	// for the next commit to store with its events (see SubmitWith and
	// admitWith).
	brought store.Batch
	// armed are the client calls whose deadline has a timer (see
	// armDeadlines).
	armed map[string]bool
}

func newSession(id string) *session {
	return &session{id: id, loaded: make(chan struct{}), inflight: runtime.NewInFlight(), changed: make(chan struct{}), heldMoved: make(chan struct{})}
}

// session returns the loaded session, loading it from its latest checkpoint
// and the log on first use. The caller holds it until it calls release;
// a held session is never evicted.
func (h *Host) session(ctx context.Context, id string) (*session, error) {
	for {
		h.mu.Lock()
		s := h.sessions[id]
		if s == nil {
			s = newSession(id)
			s.refs = 1
			h.insert(s)
			h.mu.Unlock()
			st, rep, err := h.load(ctx, id)
			if err == nil {
				s.mu.Lock()
				s.drive, s.checkpointed = core.NewDrive(st), runtime.CheckpointMark{Seq: rep.CheckpointSeq}
				s.mu.Unlock()
			}
			if err := h.finishLoad(s, err); err != nil {
				return nil, err
			}
			return s, nil
		}
		s.refs++
		h.mu.Unlock()
		select {
		case <-s.loaded:
		case <-ctx.Done():
			h.release(s)
			return nil, ctx.Err()
		}
		if s.loadErr == nil {
			return s, nil
		}
		// Its loader failed (perhaps only its own context ended) and took
		// it out of the map: try again, loading it ourselves if need be.
		h.release(s)
	}
}

// finishLoad ends the load (or creation) of s, which the caller holds: on
// failure s leaves the map and the caller's hold is released.
func (h *Host) finishLoad(s *session, err error) error {
	if err != nil {
		h.mu.Lock()
		s.loadErr = err
		if h.sessions[s.id] == s {
			delete(h.sessions, s.id)
		}
		h.mu.Unlock()
	}
	close(s.loaded)
	if err != nil {
		h.release(s)
	}
	return err
}

// insert puts a session in the map and asks the sweeper to run when more
// are loaded than the idle bound. The caller holds h.mu.
func (h *Host) insert(s *session) {
	h.sessions[s.id] = s
	h.touch(s)
	if h.opt.MaxIdleSessions >= 0 && len(h.sessions) > h.opt.MaxIdleSessions {
		select {
		case h.kick <- struct{}{}:
		default: // a sweep is already due
		}
	}
}

// release ends a hold taken by session.
func (h *Host) release(s *session) {
	h.mu.Lock()
	s.refs--
	h.touch(s)
	h.mu.Unlock()
}

// touch records a use of s. The caller holds h.mu.
func (h *Host) touch(s *session) {
	h.uses++
	s.used, s.lastUsed = h.uses, h.opt.Now()
}

// load rebuilds a session's state from its latest usable checkpoint and the
// events after it, or from its whole log.
func (h *Host) load(ctx context.Context, id string) (*core.State, runtime.LoadReport, error) {
	return runtime.LoadStateReport(ctx, h.opt.Log, h.opt.Checkpoints, h.opt.Blobs, id, h.opt.Logger)
}

// commit appends an intent's proposals together with the steps the core
// takes on its own after them (core.Drive.Chain), in one transaction: a
// turn commits two appends instead of four. The drive has applied them
// already; if the append fails, or the store committed other events, the
// drive is rebuilt from the log.
func (h *Host) commit(s *session, in core.Intent) error {
	chained, want, err := s.drive.Chain(h.nowMs(), runtime.ChainSteps)
	var events []core.Event
	if err == nil {
		events, err = store.AppendBatch(h.ctx, h.opt.Log, h.opt.Blobs, s.id, chained.ExpectedHead, chained.Proposals, s.brought)
		if err == nil {
			if h.opt.Executor != nil {
				blob.Warm(h.opt.Executor.Blobs, s.brought.Blobs) // the next request lowers them
			}
			s.brought = store.Batch{} // stored; a failed commit leaves them to the next
		}
		if err == nil && !sameCommit(events, want) {
			err = fmt.Errorf("session %s: the store committed other events than the ones appended", s.id)
		}
	}
	if err != nil {
		h.rebuild(s)
		return err
	}
	s.drive.Appended()
	s.remember(events)
	if q := len(s.drive.State().Queue); q != s.queued {
		h.queuedRuns.Add(int64(q - s.queued))
		s.queued = q
	}
	if h.opt.Observer != nil {
		h.opt.Observer.Committed(s.id, events)
	}
	close(s.changed)
	s.changed = make(chan struct{})
	h.mu.Lock()
	h.touch(s) // work finishing in the background counts as a use, for IdleTTL
	h.mu.Unlock()
	s.inflight.CancelStale(s.drive.State())
	h.checkpoint(s)
	return nil
}

// sameCommit reports whether the store committed the events a chained
// append applied: the same seqs and times, in order.
func sameCommit(got, want []core.Event) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].Seq != want[i].Seq || got[i].ObservedAtMs != want[i].ObservedAtMs || got[i].Kind != want[i].Kind {
			return false
		}
	}
	return true
}

// rebuild replaces the session's drive with one loaded from the log, after
// an append failed or the log moved under it. If the log cannot be read
// either, the drive stays as it is: one still ahead of the log admits and
// plans nothing, and the next use (current) tries again.
// The caller holds s.mu.
func (h *Host) rebuild(s *session) {
	s.forget()
	s.drive.Abandon()
	st, rep, err := h.load(h.ctx, s.id)
	if err != nil {
		return
	}
	s.drive = core.NewDrive(st)
	if rep.CheckpointSeq > s.checkpointed.Seq {
		s.checkpointed = runtime.CheckpointMark{Seq: rep.CheckpointSeq}
	}
}

// current returns the session's drive, first rebuilding it from the log if
// a chained append left it ahead (rebuild); nil if it is still ahead.
// The caller holds s.mu.
func (h *Host) current(s *session) *core.Drive {
	if s.drive.Ahead() {
		h.rebuild(s)
		if s.drive.Ahead() {
			return nil
		}
	}
	return s.drive
}

// checkpoint writes a checkpoint of the session when the policy says one is
// due (Options.CheckpointPolicy).
// Other commits cost one comparison. A failed write is logged and retried
// at the next commit that finds one due; the log stays authoritative.
// The caller holds s.mu.
func (h *Host) checkpoint(s *session) {
	st := s.drive.State()
	if h.opt.Checkpoints == nil || !h.opt.CheckpointPolicy.Due(st, s.checkpointed.Seq) {
		return
	}
	mark, err := h.opt.CheckpointPolicy.Maybe(h.ctx, h.opt.Checkpoints, h.opt.Blobs, st, s.checkpointed)
	if err != nil && h.ctx.Err() == nil {
		h.opt.Logger.Warn("writing a reducer checkpoint failed", "session", s.id, "head", st.Head, "err", err)
	}
	s.checkpointed = mark
}
