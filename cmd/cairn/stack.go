package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/metrics"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/anthropic"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/httpx"
	"github.com/cairn-agents/cairn/provider/responses"
	"github.com/cairn-agents/cairn/provider/transcribe"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/store/sqlite"
)

// apiKinds are the API kinds this binary has adapters for.
var apiKinds = []string{core.APIChatCompletions, core.APIOpenAIResponses, core.APIAnthropicMessages}

// providerTransport is the transport of every provider call this process
// makes, shared so that its connections are too.
var providerTransport = sync.OnceValue(func() http.RoundTripper { return httpx.NewTransport() })

// providerClient is the client of provider calls (the adapters' and the
// transcriber's) over transport; nil means providerTransport.
func providerClient(transport http.RoundTripper) *http.Client {
	if transport == nil {
		transport = providerTransport()
	}
	return &http.Client{Transport: transport}
}

// adapters returns one adapter per API kind; endpoints and keys are resolved
// by resolver just before each provider call. A nil transport is
// providerTransport.
func adapters(resolver endpoint.Resolver, transport http.RoundTripper) map[string]provider.Adapter {
	client := providerClient(transport)
	return map[string]provider.Adapter{
		core.APIChatCompletions:   chat.New(resolver, client),
		core.APIOpenAIResponses:   responses.New(resolver, client),
		core.APIAnthropicMessages: anthropic.New(resolver, client),
	}
}

// validateParams checks a session's provider parameters with its API
// kind's adapter; a kind whose adapter takes none refuses any.
func validateParams(apiKind string, params json.RawMessage) error {
	if len(params) == 0 {
		return nil
	}
	v, ok := adapters(endpoint.Static{}, nil)[apiKind].(provider.ParamsValidator)
	if !ok {
		return fmt.Errorf("API kind %s takes no provider parameters yet", apiKind)
	}
	return v.ValidateParams(params)
}

// hostOptions say how providers and tools are reached; they are the same for
// every store.
type hostOptions struct {
	resolver  endpoint.Resolver
	transport http.RoundTripper // nil: the default HTTP transport
	tools     []runtime.Tool    // besides the built-in vfs_* tools
	logger    *slog.Logger
	// maxIdleSessions and idleTTL bound the idle sessions a local host
	// keeps in memory (0: local.DefaultMaxIdleSessions, DefaultIdleTTL;
	// negative: no bound).
	maxIdleSessions int
	idleTTL         time.Duration
	mcp             runtime.MCPServers // nil: no MCP servers
	observer        runtime.Observer   // nil: no metrics
	retryBudget     time.Duration      // of retryable provider errors; 0: the default
	metrics         *metrics.Metrics   // nil: no gauges of the stores
}

// executorCacheBytes bounds the executor's cache of blob bytes.
const executorCacheBytes = 64 << 20

// startHost builds the executors over a store and starts a local host on it,
// resuming unfinished sessions.
func startHost(ctx context.Context, log store.SessionLog, blobs blob.Store, files runtime.Files, o hostOptions) (*local.Host, error) {
	tools, err := builtinTools(o.tools...)
	if err != nil {
		return nil, err
	}
	exec := &runtime.Executor{
		// Requests are built from context entries whose bytes never change:
		// the executor reads them through a bounded cache, not the store.
		Blobs:       blob.Cached(blobs, executorCacheBytes),
		Adapters:    adapters(o.resolver, o.transport),
		Tools:       tools,
		Files:       files,
		Transcriber: transcribe.New(o.resolver, providerClient(o.transport)),
		Logger:      o.logger,
		// A turn lowers only the entries no earlier turn lowered.
		Pieces:   provider.NewPieces(runtime.DefaultPiecesBytes),
		MCP:      o.mcp,
		Observer: o.observer,
	}
	cps, _ := log.(store.Checkpoints) // nil for a log without checkpoints
	host := local.New(local.Options{Log: log, Blobs: blobs, Executor: exec, Logger: o.logger, Checkpoints: cps,
		MaxIdleSessions: o.maxIdleSessions, IdleTTL: o.idleTTL, Observer: o.observer, Retry: local.RetryPolicy{Budget: o.retryBudget}})
	if err := host.Start(ctx); err != nil {
		host.Close()
		return nil, err
	}
	return host, nil
}

// builtinTools registers the tools every server offers (the vfs_* tools),
// then extra; a session uses the ones its config grants.
func builtinTools(extra ...runtime.Tool) (*runtime.Tools, error) {
	return runtime.NewTools(append(builtins(), extra...)...)
}

// builtins are the vfs_* tools and agent_run.
func builtins() []runtime.Tool { return append(runtime.VFSTools(), runtime.AgentRun()) }

// builtinToolNames are the tools a session may be granted.
func builtinToolNames() []string {
	var names []string
	for _, t := range builtins() {
		names = append(names, t.Definition().Name)
	}
	return names
}

// stack is an embedded Cairn: the SQLite store and a local host on it.
type stack struct {
	store  *sqlite.Store
	host   *local.Host
	kinds  []string
	unlock func() // gives up the data directory's lock
}

// openStack opens (creating if needed) the embedded store under dataDir,
// holding the directory's lock, and starts a host on it.
func openStack(ctx context.Context, dataDir string, o hostOptions) (*stack, error) {
	unlock, err := lockDataDir(dataDir)
	if err != nil {
		return nil, err
	}
	st, err := sqlite.Open(ctx, filepath.Clean(dataDir))
	if err != nil {
		unlock()
		return nil, fmt.Errorf("opening store in %s: %w", dataDir, err)
	}
	host, err := startHost(ctx, st, st, st, o)
	if err != nil {
		st.Close()
		unlock()
		return nil, err
	}
	return &stack{store: st, host: host, kinds: apiKinds, unlock: unlock}, nil
}

// close stops all work, then the store, then gives up the directory.
func (s *stack) close() {
	s.host.Close()
	s.store.Close()
	s.unlock()
}

// contextWindow is a session's model's window: its providerParams'
// contextWindow, else its provider record's, else the built-in table's.
func contextWindow(r endpoint.Resolver, m core.ModelSelection, params json.RawMessage) int64 {
	if n := provider.ParamsContextWindow(params); n > 0 {
		return n
	}
	return endpoint.ContextWindow(r, m.ProviderID, m.Model)
}
