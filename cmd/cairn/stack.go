package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/store/sqlite"
)

// apiKinds are the API kinds this binary has adapters for.
var apiKinds = []string{core.APIChatCompletions}

// hostOptions say how providers and tools are reached; they are the same for
// every store.
type hostOptions struct {
	resolver  endpoint.Resolver
	transport http.RoundTripper // nil: the default HTTP transport
	tools     *runtime.Tools
	logger    *slog.Logger
}

// startHost builds the executors over a store and starts a local host on it,
// resuming unfinished sessions.
func startHost(ctx context.Context, log store.SessionLog, blobs blob.Store, o hostOptions) (*local.Host, error) {
	tools := o.tools
	if tools == nil {
		tools, _ = runtime.NewTools()
	}
	exec := &runtime.Executor{
		Blobs:    blobs,
		Adapters: map[string]provider.Adapter{core.APIChatCompletions: chat.New(o.resolver, &http.Client{Transport: o.transport})},
		Tools:    tools,
	}
	host := local.New(local.Options{Log: log, Blobs: blobs, Executor: exec, Logger: o.logger})
	if err := host.Start(ctx); err != nil {
		host.Close()
		return nil, err
	}
	return host, nil
}

// stack is an embedded Cairn: the SQLite store and a local host on it.
type stack struct {
	store *sqlite.Store
	host  *local.Host
	kinds []string
}

// openStack opens (creating if needed) the embedded store under dataDir and
// starts a host on it.
func openStack(ctx context.Context, dataDir string, o hostOptions) (*stack, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	st, err := sqlite.Open(ctx, filepath.Clean(dataDir))
	if err != nil {
		return nil, fmt.Errorf("opening store in %s: %w", dataDir, err)
	}
	host, err := startHost(ctx, st, st, o)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &stack{store: st, host: host, kinds: apiKinds}, nil
}

// close stops all work, then the store.
func (s *stack) close() {
	s.host.Close()
	s.store.Close()
}
