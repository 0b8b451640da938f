package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider/endpoint"
)

// cairn steer reaches the active run, and cairn cancel without a run
// cancels it; with no run active, cancel says how to name one.
func TestSteerAndCancel(t *testing.T) {
	held := make(chan struct{})
	var once sync.Once
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		once.Do(func() { close(held) })
		<-r.Context().Done() // holds the answer until the run is cancelled
	}))
	t.Cleanup(fake.Close)
	st, err := openStack(context.Background(), t.TempDir(), hostOptions{logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		resolver: endpoint.Static{"fake": {BaseURL: fake.URL + "/v1"}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.NewServer(st.host, api.ServerOptions{APIKinds: st.kinds}).Handler())
	t.Cleanup(func() { srv.Close(); st.close() })
	s := &vfsServer{url: srv.URL, st: st}
	ctx := context.Background()
	c := api.NewClient(srv.URL, nil)
	created, err := c.CreateSession(ctx, api.CreateSessionParams{Model: core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	sid := created.SessionID
	if _, err := s.cairn(t, "cancel", sid); err == nil || !strings.Contains(err.Error(), "no active run") {
		t.Fatalf("cancel with nothing running: %v", err)
	}
	run, err := c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: []api.InputPart{{Type: "text", Text: "go"}}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the model call never started")
	}
	if out := s.mustCairn(t, "steer", sid, "keep", "it", "short"); !strings.Contains(out, "accepted by run "+run.RunID) {
		t.Fatalf("steer printed %q", out)
	}
	if out := s.mustCairn(t, "cancel", sid); !strings.HasPrefix(out, "run "+run.RunID+" ") { // its status as the cancel left it
		t.Fatalf("cancel printed %q", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := c.ReadRun(ctx, sid, run.RunID)
		if err == nil && r.Status == core.StatusCancelled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end cancelled: %+v %v", r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
