package local

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// countingLog counts the events its ReadAfter returns.
type countingLog struct {
	store.SessionLog
	read atomic.Int64
}

func (l *countingLog) ReadAfter(ctx context.Context, id string, after int64, limit int) ([]core.Event, error) {
	evs, err := l.SessionLog.ReadAfter(ctx, id, after, limit)
	l.read.Add(int64(len(evs)))
	return evs, err
}

// cpEnv is a host with checkpoints over shared memory stores, restartable
// over a (possibly wrapped) log.
type cpEnv struct {
	t       *testing.T
	blobs   *blob.Memory
	mem     *store.Memory
	adapter *scriptAdapter
	host    *Host
	logs    *testenv.Buffer
}

func newCPEnv(t *testing.T, adapter *scriptAdapter) *cpEnv {
	t.Helper()
	blobs := blob.NewMemory()
	e := &cpEnv{t: t, blobs: blobs, mem: store.NewMemory(blobs), adapter: adapter, logs: &testenv.Buffer{}}
	e.start(e.mem, e.mem)
	return e
}

// everyIdle checkpoints at every idle boundary, so that tests see one
// after each run.
var everyIdle = runtime.CheckpointPolicy{IdleEvery: 1}

func (e *cpEnv) start(log store.SessionLog, cps store.Checkpoints) {
	e.t.Helper()
	tools, err := runtime.NewTools()
	if err != nil {
		e.t.Fatal(err)
	}
	e.host = New(Options{
		Log: log, Blobs: e.blobs, Checkpoints: cps, CheckpointPolicy: everyIdle,
		Executor: &runtime.Executor{Blobs: e.blobs, Adapters: map[string]provider.Adapter{core.APIChatCompletions: e.adapter}, Tools: tools},
		Logger:   slog.New(slog.NewTextHandler(e.logs, nil)),
		Retry:    RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 50 * time.Millisecond},
	})
	if err := e.host.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	h := e.host
	e.t.Cleanup(h.Close)
}

// stored returns the state a stored checkpoint holds, as one
// core.EncodeCheckpoint, reading its chunks.
func (e *cpEnv) stored(d content.Digest) ([]byte, error) {
	ctx := context.Background()
	data, err := e.blobs.Get(ctx, d)
	if err != nil {
		return nil, err
	}
	chunks := map[content.Digest][]byte{}
	for {
		need, err := core.CheckpointNeeds(data, chunks)
		if err != nil {
			return nil, err
		}
		if len(need) == 0 {
			break
		}
		for _, r := range need {
			if chunks[r], err = e.blobs.Get(ctx, r); err != nil {
				return nil, err
			}
		}
	}
	st, err := core.DecodeCheckpointParts(data, chunks)
	if err != nil {
		return nil, err
	}
	return core.EncodeCheckpoint(st)
}

func (e *cpEnv) create(id string) {
	e.t.Helper()
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "test", APIKind: core.APIChatCompletions, Model: "m"}}
	if _, err := e.host.CreateSession(context.Background(), id, cfg, nil); err != nil {
		e.t.Fatal(err)
	}
}

func (e *cpEnv) startRun(id, text string) string {
	e.t.Helper()
	item, err := runtime.TextInput(context.Background(), e.blobs, text)
	if err != nil {
		e.t.Fatal(err)
	}
	adm, err := e.host.Submit(context.Background(), id, core.StartRun{AtMs: 1, RunID: e.host.NewID("run_"), Input: []core.InputItem{item}})
	if err != nil {
		e.t.Fatal(err)
	}
	return adm.RunID
}

func (e *cpEnv) waitRun(id, runID string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var status string
		if err := e.host.Inspect(context.Background(), id, func(s *core.State) { status = s.Run(runID).Status }); err != nil {
			e.t.Fatal(err)
		}
		if status == core.StatusCompleted {
			return
		}
		if status != core.StatusQueued && status != core.StatusRunning || time.Now().After(deadline) {
			e.t.Fatalf("run %s is %s", runID, status)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (e *cpEnv) head(id string) int64 {
	e.t.Helper()
	l, err := e.mem.Session(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return l.Head
}

// latest returns the seq of the session's latest checkpoint (0: none).
func (e *cpEnv) latest(id string) int64 {
	e.t.Helper()
	seq, _, err := e.mem.LatestCheckpoint(context.Background(), id, 0)
	if errors.Is(err, store.ErrCheckpointNotFound) {
		return 0
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return seq
}

// liveCheckpoint is the encoded live state of the session.
func (e *cpEnv) liveCheckpoint(id string) []byte {
	e.t.Helper()
	var out []byte
	var err error
	if ierr := e.host.Inspect(context.Background(), id, func(s *core.State) { out, err = core.EncodeCheckpoint(s) }); ierr != nil || err != nil {
		e.t.Fatal(ierr, err)
	}
	return out
}

// The host checkpoints a session when it becomes idle, not while its run
// is active; the checkpoint is the live state, and older ones are pruned.
func TestHost_CheckpointsAtIdleBoundaries(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		entered <- struct{}{}
		<-release
		return answer(ctx, b, "done")
	}}
	e := newCPEnv(t, adapter)
	e.create("s1")
	created := e.head("s1")
	if got := e.latest("s1"); got != created {
		t.Fatalf("after creation the latest checkpoint is at %d, want the idle head %d", got, created)
	}
	runID := e.startRun("s1", "go")
	<-entered
	if busy := e.head("s1"); busy <= created || e.latest("s1") != created {
		t.Fatalf("while the run is active (head %d) the latest checkpoint moved to %d", busy, e.latest("s1"))
	}
	close(release)
	e.waitRun("s1", runID)
	final := e.head("s1")
	seq, d, err := e.mem.LatestCheckpoint(context.Background(), "s1", 0)
	if err != nil || seq != final {
		t.Fatalf("after the run the latest checkpoint is %d, %v; want the idle head %d", seq, err, final)
	}
	if data, err := e.stored(d); err != nil || !bytes.Equal(data, e.liveCheckpoint("s1")) {
		t.Fatalf("the checkpoint is not the live state (%v)", err)
	}
	if _, _, err := e.mem.LatestCheckpoint(context.Background(), "s1", final-1); !errors.Is(err, store.ErrCheckpointNotFound) {
		t.Fatalf("the creation checkpoint was not pruned: %v", err)
	}
	if strings.Contains(e.logs.String(), "checkpoint") {
		t.Fatalf("checkpoint warnings: %s", e.logs)
	}
}

// A host that resumes an unfinished session starts from its checkpoint and
// reads only the events after it; the resumed run then finishes.
func TestHost_ResumeReadsOnlyTheTailAfterTheCheckpoint(t *testing.T) {
	var crashed atomic.Bool
	entered := make(chan struct{}, 1)
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		if n == 0 || crashed.Load() {
			return answer(ctx, b, "answered")
		}
		entered <- struct{}{}
		<-ctx.Done() // the host goes away while the call is in flight
		return provider.Output{}, ctx.Err()
	}}
	e := newCPEnv(t, adapter)
	e.create("s1")
	e.waitRun("s1", e.startRun("s1", "first"))
	cp := e.latest("s1")
	if cp != e.head("s1") {
		t.Fatalf("checkpoint at %d, want the idle head %d", cp, e.head("s1"))
	}
	second := e.startRun("s1", "second")
	<-entered
	e.host.Close()
	crashed.Store(true)
	head := e.head("s1")
	if head <= cp || e.latest("s1") != cp {
		t.Fatalf("head %d, checkpoint %d: the unfinished run should have events after the checkpoint", head, e.latest("s1"))
	}

	counted := &countingLog{SessionLog: e.mem}
	e.start(counted, e.mem)
	if got := counted.read.Load(); got != head-cp {
		t.Fatalf("resuming read %d events; want only the %d after the checkpoint at %d (head %d)", got, head-cp, cp, head)
	}
	e.waitRun("s1", second)

	// Without checkpoints the same resume would read the whole log.
	e.host.Close()
	full := &countingLog{SessionLog: e.mem}
	e.start(full, nil)
	if err := e.host.Inspect(context.Background(), "s1", func(*core.State) {}); err != nil {
		t.Fatal(err)
	}
	if got := full.read.Load(); got != e.head("s1") {
		t.Fatalf("a load without checkpoints read %d events, want %d", got, e.head("s1"))
	}
}

// While a run stays active, the host still checkpoints every
// runtime.CheckpointEvery events, and not in between.
func TestHost_CheckpointsEveryThousandEventsWhileBusy(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		entered <- struct{}{}
		<-release
		return answer(ctx, b, "done")
	}}
	e := newCPEnv(t, adapter)
	defer close(release)
	e.create("s1")
	created := e.latest("s1")
	e.startRun("s1", "go")
	<-entered
	item, err := runtime.TextInput(context.Background(), e.blobs, "more")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; e.head("s1") < created+2*runtime.CheckpointEvery+10; i++ {
		if _, err := e.host.Submit(context.Background(), "s1", core.Steer{AtMs: 2, SteeringID: e.host.NewID("st_"), Input: []core.InputItem{item}}); err != nil {
			t.Fatal(err)
		}
		head, latest := e.head("s1"), e.latest("s1")
		want := created + (head-created)/runtime.CheckpointEvery*runtime.CheckpointEvery
		if latest != want {
			t.Fatalf("at head %d the latest checkpoint is %d, want %d", head, latest, want)
		}
	}
	if e.latest("s1") != created+2*runtime.CheckpointEvery {
		t.Fatalf("latest checkpoint %d", e.latest("s1"))
	}
}

// failingCheckpoints refuses every checkpoint.
type failingCheckpoints struct{ store.Checkpoints }

func (failingCheckpoints) PutCheckpoint(context.Context, string, int64, content.Digest) error {
	return errors.New("checkpoint catalog unavailable")
}

// A checkpoint that cannot be written is logged; the session carries on.
func TestHost_AFailedCheckpointIsLoggedAndHarmless(t *testing.T) {
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		return answer(ctx, b, "done")
	}}
	e := newCPEnv(t, adapter)
	e.host.Close()
	e.start(e.mem, failingCheckpoints{e.mem})
	e.create("s1")
	e.waitRun("s1", e.startRun("s1", "go"))
	if got := e.latest("s1"); got != 0 {
		t.Fatalf("a checkpoint was recorded at %d", got)
	}
	if out := e.logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "checkpoint catalog unavailable") {
		t.Fatalf("no warning logged: %q", out)
	}
}
