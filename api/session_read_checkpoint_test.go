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

func newCheckpointServer(t *testing.T, checkpoints bool) (*api.Client, *damagedLog, *store.Memory) {
	t.Helper()
	blobs := blob.NewMemory()
	mem := store.NewMemory(blobs)
	log := &damagedLog{SessionLog: mem}
	var cps store.Checkpoints
	if checkpoints {
		cps = mem
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := local.New(local.Options{Log: log, Blobs: blobs, Checkpoints: cps, Logger: quiet,
		CheckpointPolicy: runtime.CheckpointPolicy{IdleEvery: 1}, // a checkpoint after every change
		Executor:         &runtime.Executor{Blobs: blobs, Adapters: map[string]provider.Adapter{core.APIChatCompletions: newFakeModel()}, Files: mem}})
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	srv := httptest.NewServer(api.NewServer(h, api.ServerOptions{APIKinds: []string{core.APIChatCompletions}, Logger: quiet}).Handler())
	t.Cleanup(srv.Close)
	return api.NewClient(srv.URL, nil), log, mem
}

// session/read answers from the latest checkpoint and the log's tail: for an
// idle session checkpointed at its head it reads no events at all.
func TestSessionRead_FromCheckpointAndTail(t *testing.T) {
	ctx := context.Background()
	c, log, mem := newCheckpointServer(t, true)
	id, err := c.CreateSession(ctx, api.CreateSessionParams{Model: testModel(), Instructions: "be brief"})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two"} {
		if _, err := c.AppendContext(ctx, api.ContextAppendParams{SessionID: id.SessionID, Kind: core.EntryMessage, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	life, err := mem.Session(ctx, id.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if seq, _, err := mem.LatestCheckpoint(ctx, id.SessionID, 0); err != nil || seq != life.Head {
		t.Fatalf("latest checkpoint %d, %v; want the idle head %d", seq, err, life.Head)
	}
	log.read.Store(0)
	got, err := c.ReadSession(ctx, id.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if n := log.read.Load(); n != 0 {
		t.Fatalf("session/read read %d events past a checkpoint at the head", n)
	}
	if got.Head != life.Head || got.ContextRevision != 3 || got.Status != core.SessionStatusOpen {
		t.Fatalf("session/read = %+v, want head %d at context revision 3", got, life.Head)
	}
}

// A session whose log lacks an event it needs fails session/read with
// data.kind history_incomplete, even while the host holds the session.
func TestSessionRead_MissingHistoryIsHistoryIncomplete(t *testing.T) {
	ctx := context.Background()
	c, log, _ := newCheckpointServer(t, false)
	id, err := c.CreateSession(ctx, api.CreateSessionParams{Model: testModel(), Instructions: "be brief"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadSession(ctx, id.SessionID); err != nil {
		t.Fatal(err)
	}
	log.drop.Store(2)
	_, err = c.ReadSession(ctx, id.SessionID)
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
