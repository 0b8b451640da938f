package local

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// flakyLog records each append's event kinds and fails the ones fail
// picks; while readsFail is set, reads fail too.
type flakyLog struct {
	store.SessionLog
	mu        sync.Mutex
	appends   [][]string
	fail      func(kinds []string) bool
	readsFail bool
}

var errFlaky = errors.New("flaky store")

func (l *flakyLog) Append(ctx context.Context, id string, head int64, props []core.Proposal) ([]core.Event, error) {
	kinds := make([]string, len(props))
	for i, p := range props {
		kinds[i] = p.Kind
	}
	l.mu.Lock()
	failing := l.fail != nil && l.fail(kinds)
	if !failing {
		l.appends = append(l.appends, kinds)
	}
	l.mu.Unlock()
	if failing {
		return nil, errFlaky
	}
	return l.SessionLog.Append(ctx, id, head, props)
}

func (l *flakyLog) ReadAfter(ctx context.Context, id string, after int64, limit int) ([]core.Event, error) {
	l.mu.Lock()
	failing := l.readsFail
	l.mu.Unlock()
	if failing {
		return nil, errFlaky
	}
	return l.SessionLog.ReadAfter(ctx, id, after, limit)
}

func newFlakyEnv(t *testing.T) (*env, *flakyLog) {
	t.Helper()
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		return answer(ctx, b, "ok")
	}}
	e := &env{t: t, blobs: blob.NewMemory(), adapter: adapter}
	e.log = store.NewMemory(e.blobs)
	flaky := &flakyLog{SessionLog: e.log}
	e.host = New(Options{
		Log: flaky, Blobs: e.blobs,
		Executor: &runtime.Executor{Blobs: e.blobs, Adapters: map[string]provider.Adapter{core.APIChatCompletions: adapter}},
		Retry:    RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
	})
	if err := e.host.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.host.Close)
	e.create("s1")
	return e, flaky
}

// A turn appends the core's own steps with the command that caused them:
// accepting a run opens its turn in the same append, and admitting the
// answer completes the run in the same append. The log holds the same
// events as one append per step would.
func TestHost_ATurnIsTwoAppends(t *testing.T) {
	e, flaky := newFlakyEnv(t)
	before := len(flaky.appends)
	run := e.startRun("s1", "hello")
	if r := e.waitRun("s1", run); r.Status != core.StatusCompleted {
		t.Fatalf("run %s", r.Status)
	}
	got := flaky.appends[before:]
	want := [][]string{
		{core.KindRunAccepted, core.KindTurnStarted, core.KindContextEntriesApplied, core.KindTurnPlanned, core.KindTurnGenerationRequested},
		{core.KindTurnGenerationCompleted, core.KindContextEntriesApplied, core.KindTurnCompleted, core.KindRunCompleted},
	}
	if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
		t.Fatalf("appends of one turn:\n got %v\nwant %v", got, want)
	}
}

// When the append that carries chained steps fails, the host's state is
// the log's again (the drive had applied them), and the work goes on: the
// answer is admitted on a later attempt. While the log cannot be read
// either, the session is not read from its drive, which is ahead of the
// log.
func TestHost_AFailedChainedAppendRebuildsFromTheLog(t *testing.T) {
	e, flaky := newFlakyEnv(t)
	failed := make(chan struct{})
	var once sync.Once
	flaky.fail = func(kinds []string) bool {
		if kinds[0] != core.KindTurnGenerationCompleted {
			return false
		}
		fail := false
		once.Do(func() { fail = true; flaky.readsFail = true; close(failed) })
		return fail
	}
	// Reads fail from the failed append on, until the test lets them.
	run := e.startRun("s1", "hello")
	<-failed
	if err := e.host.Inspect(context.Background(), "s1", func(*core.State) {}); err == nil {
		t.Fatal("the session was read from a drive ahead of its log")
	}
	flaky.mu.Lock()
	flaky.readsFail = false
	flaky.mu.Unlock()
	if r := e.waitRun("s1", run); r.Status != core.StatusCompleted {
		t.Fatalf("run %s", r.Status)
	}
	var head int64
	var state []byte
	if err := e.host.Inspect(context.Background(), "s1", func(s *core.State) {
		head = s.Head
		state, _ = core.EncodeCheckpoint(s)
	}); err != nil {
		t.Fatal(err)
	}
	evs := e.events("s1")
	replayed := core.NewState()
	for _, ev := range evs {
		if err := replayed.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := core.EncodeCheckpoint(replayed)
	if head != int64(len(evs)) || string(state) != string(want) {
		t.Fatalf("the host's state (head %d) is not the log's (%d events)", head, len(evs))
	}
	if n := countKinds(evs)[core.KindTurnGenerationCompleted]; n != 1 {
		t.Fatalf("%d generations admitted", n)
	}
}

// A drive left ahead of a log it could not read is rebuilt by the pump's
// retry once the log reads again: the pump does not take its idle Next
// for a session with nothing to do.
func TestHost_PumpRetriesADriveLeftAhead(t *testing.T) {
	e, flaky := newFlakyEnv(t)
	flaky.fail = func([]string) bool { return true }
	flaky.mu.Lock()
	flaky.readsFail = true
	flaky.mu.Unlock()
	s, err := e.host.session(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer e.host.release(s)
	s.mu.Lock()
	item, err := runtime.TextInput(context.Background(), e.blobs, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.drive.Admit(core.StartRun{AtMs: 1, RunID: "r1", Input: []core.InputItem{item}}); err != nil {
		t.Fatal(err)
	}
	if err := e.host.commit(s, s.drive.Next(1)); !errors.Is(err, errFlaky) || !s.drive.Ahead() {
		t.Fatalf("commit: %v, ahead %v; want the flaky error and a drive still ahead", err, s.drive.Ahead())
	}
	e.host.pump(s)
	s.mu.Unlock()

	flaky.mu.Lock()
	flaky.readsFail, flaky.fail = false, nil
	flaky.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		ahead, run := s.drive.Ahead(), s.drive.State().Run("r1")
		s.mu.Unlock()
		if !ahead {
			if run != nil {
				t.Fatal("the rebuilt state holds the run whose append failed")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the drive is still ahead of the log: nothing retried its rebuild")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
