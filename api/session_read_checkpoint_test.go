package api_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store"
)

// damagedLog counts the events its reads return and, once drop is set,
// loses the event at that seq from every read.
type damagedLog struct {
	store.SessionLog
	drop atomic.Int64
	read atomic.Int64
}

func (l *damagedLog) ReadAfter(ctx context.Context, id string, after int64, limit int) ([]core.Event, error) {
	evs, err := l.SessionLog.ReadAfter(ctx, id, after, limit)
	var out []core.Event
	for _, ev := range evs {
		if ev.Seq != l.drop.Load() {
			out = append(out, ev)
		}
	}
	l.read.Add(int64(len(out)))
	return out, err
}

func (l *damagedLog) ReadBefore(ctx context.Context, id string, before int64, limit int) ([]core.Event, error) {
	evs, err := l.SessionLog.ReadBefore(ctx, id, before, limit)
	return slices.DeleteFunc(evs, func(ev core.Event) bool { return ev.Seq == l.drop.Load() }), err
}

// readEnv is a server over a local host on a memory store whose log can be
// damaged; restart replaces the host and the server by new ones over the
// same store, which hold no session until one is used.
type readEnv struct {
	t     *testing.T
	c     *api.Client
	host  *local.Host
	model *fakeModel
	log   *damagedLog
	mem   *store.Memory
	blobs blob.Store
	cps   store.Checkpoints
}

func newCheckpointServer(t *testing.T, checkpoints bool) (*api.Client, *damagedLog, *store.Memory) {
	e := newReadEnv(t, checkpoints)
	return e.c, e.log, e.mem
}

func newReadEnv(t *testing.T, checkpoints bool) *readEnv {
	t.Helper()
	blobs := blob.NewMemory()
	mem := store.NewMemory(blobs)
	e := &readEnv{t: t, log: &damagedLog{SessionLog: mem}, mem: mem, blobs: blobs}
	if checkpoints {
		e.cps = mem
	}
	e.restart()
	return e
}

func (e *readEnv) restart() {
	e.t.Helper()
	if e.host != nil {
		e.host.Close()
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.model = newFakeModel()
	e.host = local.New(local.Options{Log: e.log, Blobs: e.blobs, Checkpoints: e.cps, Logger: quiet,
		CheckpointPolicy: runtime.CheckpointPolicy{IdleEvery: 1}, // a checkpoint after every change
		Executor:         &runtime.Executor{Blobs: e.blobs, Adapters: map[string]provider.Adapter{core.APIChatCompletions: e.model}, Files: e.mem}})
	if err := e.host.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(e.host.Close)
	e.c = e.serve(e.host)
}

// serve serves the API over h.
func (e *readEnv) serve(h api.Host) *api.Client {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(api.NewServer(h, api.ServerOptions{APIKinds: []string{core.APIChatCompletions}, Logger: quiet}).Handler())
	e.t.Cleanup(srv.Close)
	return api.NewClient(srv.URL, nil)
}

// session/read of a session the host does not hold answers from the latest
// checkpoint and the log's tail: for an idle session checkpointed at its
// head it reads no events at all, and the read leaves the session out of
// the host's memory.
func TestSessionRead_FromCheckpointAndTail(t *testing.T) {
	ctx := context.Background()
	e := newReadEnv(t, true)
	id, err := e.c.CreateSession(ctx, api.CreateSessionParams{Model: testModel(), Instructions: "be brief"})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two"} {
		if _, err := e.c.AppendContext(ctx, api.ContextAppendParams{SessionID: id.SessionID, Kind: core.EntryMessage, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	life, err := e.mem.Session(ctx, id.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if seq, _, err := e.mem.LatestCheckpoint(ctx, id.SessionID, 0); err != nil || seq != life.Head {
		t.Fatalf("latest checkpoint %d, %v; want the idle head %d", seq, err, life.Head)
	}
	e.restart()
	e.log.read.Store(0)
	got, err := e.c.ReadSession(ctx, id.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.log.read.Load(); n != 0 {
		t.Fatalf("session/read read %d events past a checkpoint at the head", n)
	}
	if got.Head != life.Head || got.ContextRevision != 3 || got.Status != core.SessionStatusOpen {
		t.Fatalf("session/read = %+v, want head %d at context revision 3", got, life.Head)
	}
	if e.host.InspectLive(id.SessionID, func(*core.State) {}) {
		t.Fatal("session/read loaded the session into the host")
	}
}

// session/read of a session the host holds answers from the host's state:
// even without checkpoints it reads no event of the log.
func TestSessionRead_LiveSessionReadsNoEvents(t *testing.T) {
	ctx := context.Background()
	e := newReadEnv(t, false)
	id, err := e.c.CreateSession(ctx, api.CreateSessionParams{Model: testModel(), Instructions: "be brief"})
	if err != nil {
		t.Fatal(err)
	}
	adm, err := e.c.AppendContext(ctx, api.ContextAppendParams{SessionID: id.SessionID, Kind: core.EntryMessage, Text: "one"})
	if err != nil {
		t.Fatal(err)
	}
	e.log.read.Store(0)
	got, err := e.c.ReadSession(ctx, id.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.log.read.Load(); n != 0 {
		t.Fatalf("session/read of a live session read %d events", n)
	}
	if got.ContextRevision != adm.Revision || got.Head != 3 {
		t.Fatalf("session/read = %+v, want head 3 at context revision %d", got, adm.Revision)
	}
}

// A session not in memory whose log lacks an event it needs fails
// session/read with data.kind history_incomplete. (A session the host holds
// was loaded from a complete log, and is answered from that.)
func TestSessionRead_MissingHistoryIsHistoryIncomplete(t *testing.T) {
	ctx := context.Background()
	e := newReadEnv(t, false)
	id, err := e.c.CreateSession(ctx, api.CreateSessionParams{Model: testModel(), Instructions: "be brief"})
	if err != nil {
		t.Fatal(err)
	}
	e.restart()
	if _, err := e.c.ReadSession(ctx, id.SessionID); err != nil {
		t.Fatal(err)
	}
	e.log.drop.Store(2)
	_, err = e.c.ReadSession(ctx, id.SessionID)
	var rpcErr *api.Error
	if !errors.As(err, &rpcErr) || rpcErr.Kind() != runtime.KindHistoryIncomplete || rpcErr.Code != api.CodeDomain {
		t.Fatalf("session/read over a damaged log: %v, want data.kind %s", err, runtime.KindHistoryIncomplete)
	}
}

// session/transcript/read fails the same way when its page's range lacks an
// event, on every path: the latest page, an older page and a forward read.
func TestTranscriptRead_MissingHistoryIsHistoryIncomplete(t *testing.T) {
	ctx := context.Background()
	c, log, _ := newCheckpointServer(t, false)
	id, err := c.CreateSession(ctx, api.CreateSessionParams{Model: testModel(), Instructions: "be brief"})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two", "three"} {
		if _, err := c.AppendContext(ctx, api.ContextAppendParams{SessionID: id.SessionID, Kind: core.EntryMessage, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.ReadTranscript(ctx, api.TranscriptReadParams{SessionID: id.SessionID}); err != nil {
		t.Fatal(err)
	}
	log.drop.Store(2)
	zero := int64(0)
	for name, p := range map[string]api.TranscriptReadParams{
		"latest page":  {SessionID: id.SessionID},
		"older page":   {SessionID: id.SessionID, Before: 4},
		"forward page": {SessionID: id.SessionID, After: &zero},
	} {
		page, err := c.ReadTranscript(ctx, p)
		var rpcErr *api.Error
		if !errors.As(err, &rpcErr) || rpcErr.Kind() != runtime.KindHistoryIncomplete || rpcErr.Code != api.CodeDomain {
			t.Errorf("%s over a damaged log: %d events, %v; want data.kind %s", name, len(page.Events), err, runtime.KindHistoryIncomplete)
		}
	}
}
