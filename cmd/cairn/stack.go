package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store/sqlite"
)

// stack is an embedded Cairn: SQLite store, executors and the local host.
type stack struct {
	store *sqlite.Store
	host  *local.Host
	kinds []string
}

// stackOptions say where data lives and how providers are reached.
type stackOptions struct {
	dataDir   string
	resolver  endpoint.Resolver
	transport http.RoundTripper // nil: the default HTTP transport
	tools     *runtime.Tools
	logger    *slog.Logger
}

// openStack opens (creating if needed) the embedded store under dataDir and
// starts a host on it, resuming unfinished sessions.
func openStack(ctx context.Context, o stackOptions) (*stack, error) {
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	st, err := sqlite.Open(ctx, filepath.Clean(o.dataDir))
	if err != nil {
		return nil, fmt.Errorf("opening store in %s: %w", o.dataDir, err)
	}
	client := &http.Client{Transport: o.transport}
	tools := o.tools
	if tools == nil {
		tools, _ = runtime.NewTools()
	}
	exec := &runtime.Executor{
		Blobs:    st,
		Adapters: map[string]provider.Adapter{core.APIChatCompletions: chat.New(o.resolver, client)},
		Tools:    tools,
	}
	host := local.New(local.Options{Log: st, Blobs: st, Executor: exec, Logger: o.logger})
	if err := host.Start(ctx); err != nil {
		host.Close()
		st.Close()
		return nil, err
	}
	return &stack{store: st, host: host, kinds: []string{core.APIChatCompletions}}, nil
}

// close stops all work, then the store.
func (s *stack) close() {
	s.host.Close()
	s.store.Close()
}
