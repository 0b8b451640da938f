package api_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store"
)

// keyedHosts maps API keys to per-universe hosts, as the hosted mode does.
type keyedHosts struct {
	byKey map[string]api.Host
	asked int
}

func (k *keyedHosts) HostFor(_ context.Context, bearer string) (api.Host, error) {
	k.asked++
	if h, ok := k.byKey[bearer]; ok {
		return h, nil
	}
	return nil, api.ErrUnauthorized
}

func newUniverseHost(t *testing.T) (*local.Host, *store.Memory) {
	t.Helper()
	blobs := blob.NewMemory()
	log := store.NewMemory(blobs)
	h := local.New(local.Options{Log: log, Blobs: blobs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Executor: &runtime.Executor{Blobs: blobs, Adapters: map[string]provider.Adapter{core.APIChatCompletions: newFakeModel()}, Files: log}})
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h, log
}

// In hosted mode the bearer key selects the universe; a missing or unknown
// key is refused with HTTP 401 and nothing happens.
func TestAuth_KeySelectsUniverseAndUnknownKeysAreRefused(t *testing.T) {
	hostA, logA := newUniverseHost(t)
	hostB, _ := newUniverseHost(t)
	hosts := &keyedHosts{byKey: map[string]api.Host{"key-a": hostA, "key-b": hostB}}
	srv := httptest.NewServer(api.NewServerFor(hosts, api.ServerOptions{APIKinds: []string{core.APIChatCompletions}}).Handler())
	t.Cleanup(srv.Close)
	ctx := context.Background()

	a := api.NewClient(srv.URL, nil).WithAPIKey("key-a")
	b := api.NewClient(srv.URL, nil).WithAPIKey("key-b")
	if _, err := a.CreateSession(ctx, api.CreateSessionParams{SessionID: "shared-name", Model: testModel()}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReadSession(ctx, "shared-name"); wantKind(t, err, api.KindNotFound) == nil {
		t.Fatal("universe B sees universe A's session")
	}
	if _, err := b.CreateSession(ctx, api.CreateSessionParams{SessionID: "shared-name", Model: testModel()}); err != nil {
		t.Fatalf("the same id in another universe: %v", err)
	}

	for _, key := range []string{"", "key-c", "KEY-A"} {
		c := api.NewClient(srv.URL, nil).WithAPIKey(key)
		_, err := c.CreateSession(ctx, api.CreateSessionParams{SessionID: "intruder", Model: testModel()})
		var rpcErr *api.Error
		if !errors.As(err, &rpcErr) || rpcErr.Kind() != api.KindUnauthorized {
			t.Fatalf("key %q: %v", key, err)
		}
	}
	resp, err := http.Post(srv.URL+"/rpc", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"session/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no key: HTTP %d", resp.StatusCode)
	}
	list, err := logA.Sessions(ctx, "", 0)
	if err != nil || len(list) != 1 || list[0].SessionID != "shared-name" {
		t.Fatalf("universe A after refused calls: %v, %v", list, err)
	}
}
