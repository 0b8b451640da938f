package api_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// The session stream sends every committed event once, in order, as it
// commits, from where the client says; a reconnect resumes after the last
// seq it saw.
func TestStream_CommittedEventsInOrder(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type got struct {
		seqs  []int64
		kinds []string
	}
	done := make(chan got, 1)
	go func() {
		var g got
		errDone := errors.New("done")
		_ = e.c.Stream(ctx, sid, 0, func(se api.StreamEvent) error {
			ev := se.Committed
			if ev == nil {
				return nil
			}
			g.seqs, g.kinds = append(g.seqs, ev.Seq), append(g.kinds, ev.Kind)
			if ev.Kind == core.KindRunCompleted {
				return errDone
			}
			return nil
		})
		done <- g
	}()
	run, err := e.c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: textInput("hello")})
	if err != nil {
		t.Fatal(err)
	}
	var g got
	select {
	case g = <-done:
	case <-ctx.Done():
		t.Fatal("the stream never sent run.completed")
	}
	for i, s := range g.seqs {
		if s != int64(i+1) {
			t.Fatalf("seqs %v: want 1, 2, 3, … each once", g.seqs)
		}
	}
	if g.kinds[0] != core.KindSessionOpened || !strings.Contains(strings.Join(g.kinds, " "), core.KindRunAccepted) {
		t.Fatalf("kinds %v", g.kinds)
	}
	// Resuming after seq 2 starts at 3.
	var first int64
	stop := errors.New("stop")
	if err := e.c.Stream(ctx, sid, 2, func(se api.StreamEvent) error {
		if se.Committed == nil {
			return nil
		}
		first = se.Committed.Seq
		return stop
	}); err != stop || first != 3 {
		t.Fatalf("resume after 2: first seq %d, %v", first, err)
	}
	r, err := e.c.ReadRun(ctx, sid, run.RunID)
	if err != nil || r.Status != core.StatusCompleted {
		t.Fatalf("run %+v, %v", r, err)
	}
}

// An unknown session is a typed not-found answer; a bad cursor is
// invalid params; in hosted mode a missing key is refused.
func TestStream_Refusals(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	err := e.c.Stream(ctx, "nope", 0, func(api.StreamEvent) error { return nil })
	var rpcErr *api.Error
	if !errors.As(err, &rpcErr) || rpcErr.Kind() != api.KindNotFound {
		t.Fatalf("unknown session: %v", err)
	}
	resp, err := http.Get(strings.TrimSuffix(e.url, "/rpc") + "/sessions/x/stream?after=-1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("after=-1: HTTP %d", resp.StatusCode)
	}

	host, _ := newUniverseHost(t)
	srv := httptest.NewServer(api.NewServerFor(&keyedHosts{byKey: map[string]api.Host{"key-a": host}}, api.ServerOptions{APIKinds: []string{core.APIChatCompletions}}).Handler())
	t.Cleanup(srv.Close)
	err = api.NewClient(srv.URL, nil).Stream(ctx, "s", 0, func(api.StreamEvent) error { return nil })
	if !errors.As(err, &rpcErr) || rpcErr.Kind() != api.KindUnauthorized {
		t.Fatalf("no key: %v", err)
	}
}

// While a generation streams its answer, its pieces reach the stream as
// deltas, before the answer is an event; a client that connects meanwhile
// gets the pieces sent before it came.
func TestStream_DeltasWhileTheAnswerStreams(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{})
	e.model.setHold(true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: textInput("hello")}); err != nil {
		t.Fatal(err)
	}
	<-e.model.arrived // the piece is sent; the answer waits
	var order []string
	errDone := errors.New("done")
	err := e.c.Stream(ctx, sid, 0, func(se api.StreamEvent) error {
		switch {
		case se.Delta != nil:
			order = append(order, "delta:"+se.Delta.Kind+":"+se.Delta.Text)
			go func() { e.model.release <- struct{}{} }() // the answer may go on once its piece is here
		case se.Committed.Kind == core.KindTurnGenerationCompleted:
			order = append(order, "answer")
		case se.Committed.Kind == core.KindRunCompleted:
			return errDone
		}
		return nil
	})
	if err != errDone {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != "delta:text:echo: ,answer" {
		t.Fatalf("stream order %v: want the piece, then the answer", order)
	}
}
