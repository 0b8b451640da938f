package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/metrics"
	"github.com/cairn-agents/cairn/objstore"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/runtime/temporal"
	"github.com/cairn-agents/cairn/store/postgres"
	"github.com/cairn-agents/cairn/web"
)

type serveOptions struct {
	dataDir, listen, configPath string
	postgres                    string
	s3                          objstore.S3Config
	temporal                    temporalFlags
	heartbeatTimeout            time.Duration // Temporal mode: SessionArgs.HeartbeatTimeoutMs of new workflows
	gc                          gcFlags       // the background blob collector
	maxIdleSessions             int           // local hosts: idle sessions kept in memory
	idleSessionTTL              time.Duration // local hosts: idle sessions unused longer are dropped
	allowHosts, allowOrigins    []string      // beyond the listen address, localhost and the server's own origin
	maxResponseBytes            int64         // the results of one HTTP response, a batch's together
	mcpCommands                 bool          // hosted mode: command (stdio) MCP servers allowed
	metricsListen               string        // "": /metrics only beside the API
	retryBudget                 time.Duration // --provider-retry-budget
}

func serveCommand() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the server: embedded (SQLite under --data) or hosted (--postgres, optional S3)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := heartbeatTimeoutFromEnv(cmd, &o); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			stopProfile, err := cpuProfile()
			if err != nil {
				return err
			}
			defer stopProfile()
			return serve(ctx, cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data", envOr("CAIRN_DATA", ".cairn"), "embedded mode: directory for everything the server stores (env CAIRN_DATA)")
	f.StringVar(&o.listen, "listen", envOr("CAIRN_LISTEN", defaultAddr), "address to serve the JSON-RPC API and the web inspector on (env CAIRN_LISTEN)")
	f.StringVar(&o.configPath, "config", os.Getenv("CAIRN_CONFIG"), "provider config file (env CAIRN_CONFIG)")
	postgresFlag(cmd, &o.postgres, "hosted mode: PostgreSQL URL; requests then need an API key")
	o.temporal.register(cmd, "hosted mode: run sessions on Temporal at `HOST:PORT` (start cairn workers too)")
	f.DurationVar(&o.heartbeatTimeout, "heartbeat-timeout", 0, "Temporal mode, advanced: how long a dead worker holds a session's model call, tool call or log append before another worker retries it; applies to session workflows started from now on (default 30s; env CAIRN_HEARTBEAT_TIMEOUT)")
	f.IntVar(&o.maxIdleSessions, "max-idle-sessions", local.DefaultMaxIdleSessions, "sessions driven in this process: keep at most this many idle ones in memory, least recently used go first (0: the default; negative: no bound)")
	f.DurationVar(&o.idleSessionTTL, "idle-session-ttl", local.DefaultIdleTTL, "sessions driven in this process: drop idle ones unused for this long from memory; they reload from their checkpoint (0: the default; negative: never)")
	f.StringArrayVar(&o.allowHosts, "allow-host", nil, "a host name the server answers for besides the listen address, localhost and loopback IPs (a reverse proxy's, a LAN name); repeatable")
	f.StringArrayVar(&o.allowOrigins, "allow-origin", nil, "an origin (scheme://host[:port]) whose web pages may call the API besides the server's own; repeatable")
	f.Int64Var(&o.maxResponseBytes, "max-response-bytes", api.DefaultMaxResponseBytes, "the most bytes of results one API response carries (a batch's together); a result past it gets response_too_large")
	s3Flags(cmd, &o)
	mcpCommandsFlag(cmd, &o.mcpCommands)
	metricsFlag(cmd, &o.metricsListen)
	o.gc.register(cmd)
	retryBudgetFlag(cmd, &o.retryBudget, "the server (workers, in Temporal mode)")
	return cmd
}

// s3Flags adds the object-storage flags of the hosted store.
func s3Flags(cmd *cobra.Command, o *serveOptions) {
	f := cmd.Flags()
	env := objstore.S3ConfigFromEnv(os.Getenv)
	o.s3 = env
	f.StringVar(&o.s3.Endpoint, "s3-endpoint", env.Endpoint, "hosted mode: S3-compatible endpoint URL for blobs over 64 KiB (env CAIRN_S3_ENDPOINT; credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)")
	f.StringVar(&o.s3.Bucket, "s3-bucket", env.Bucket, "hosted mode: S3 bucket (env CAIRN_S3_BUCKET)")
	f.StringVar(&o.s3.Region, "s3-region", env.Region, "S3 region (env CAIRN_S3_REGION)")
	f.StringVar(&o.s3.Prefix, "s3-prefix", env.Prefix, "key prefix inside the bucket (env CAIRN_S3_PREFIX)")
	f.BoolVar(&o.s3.PathStyle, "s3-path-style", env.PathStyle, "force path-style S3 addressing (env CAIRN_S3_PATH_STYLE)")
}

// providerResolver resolves endpoints and keys just before each provider call.
func providerResolver(o serveOptions) endpoint.Resolver { return endpoint.New(o.configPath, os.Getenv) }

func serve(ctx context.Context, cmd *cobra.Command, o serveOptions) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	mcp, mcpNames, closeMCP, err := openMCP(o.configPath, o.postgres == "" || o.mcpCommands, logger)
	if err != nil {
		return err
	}
	defer closeMCP()
	m := metrics.New()
	observer, stopTracing, err := observers(ctx, m, logger)
	if err != nil {
		return err
	}
	defer stopTracing()
	retryBudget, err := resolveRetryBudget(cmd, o.retryBudget)
	if err != nil {
		return err
	}
	if cmd.Flags().Changed("provider-retry-budget") && o.temporal.address != "" {
		return fmt.Errorf("--provider-retry-budget applies to the workers in Temporal mode: give it to cairn worker")
	}
	hostOpts := hostOptions{resolver: providerResolver(o), logger: logger, maxIdleSessions: o.maxIdleSessions, idleTTL: o.idleSessionTTL, mcp: mcp, observer: observer, metrics: m, retryBudget: retryBudget}
	var hosts api.Hosts
	var ready []readyCheck
	if o.maxResponseBytes <= 0 {
		return fmt.Errorf("--max-response-bytes %d: give a positive size", o.maxResponseBytes)
	}
	if o.heartbeatTimeout != 0 && o.temporal.address == "" {
		return fmt.Errorf("--heartbeat-timeout (CAIRN_HEARTBEAT_TIMEOUT) applies to the Temporal mode only: add --temporal HOST:PORT")
	}
	if o.postgres == "" {
		if o.s3.Bucket != "" || o.temporal.address != "" {
			return fmt.Errorf("S3 object storage and Temporal need the hosted store: add --postgres URL")
		}
		st, err := openStack(ctx, o.dataDir, hostOpts)
		if err != nil {
			return err
		}
		defer st.close()
		hosts = api.SingleHost{Host: st.host}
		ready = append(ready, sqliteReady(st.store))
		loadGauges(m, st.host.Load)
		blobGauge(m, st.store.BlobBytes)
		logger.Info("embedded store", "data", o.dataDir)
	} else {
		uh, checks, closeAll, err := openHosted(ctx, o, hostOpts)
		if err != nil {
			return err
		}
		ready = checks
		if o.temporal.address == "" {
			loadGauges(m, uh.load)
		}
		defer closeAll()
		hosts = uh
		logger.Info("hosted store", "s3", o.s3.Bucket != "", "temporal", o.temporal.address)
	}
	stopGC, err := startBackgroundGC(ctx, cmd, o, logger, m.GCPass)
	if err != nil {
		return err
	}
	defer stopGC()
	if o.metricsListen != "" {
		stopMetrics, err := serveMetrics(ctx, o.metricsListen, m, logger)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	if o.postgres == "" && !isLoopback(ln.Addr()) {
		logger.Warn("the embedded mode has no API keys: anyone who can reach this address can use every session", "listen", ln.Addr().String())
	}
	rpcOpts := api.ServerOptions{APIKinds: apiKinds, ValidateParams: validateParams, Logger: logger, RetentionGrace: o.gc.grace,
		AllowedHosts: append(listenHosts(o.listen, ln.Addr()), o.allowHosts...), AllowedOrigins: o.allowOrigins,
		MaxResponseBytes: o.maxResponseBytes,
		ContextWindow: func(m core.ModelSelection, params json.RawMessage) int64 {
			return contextWindow(hostOpts.resolver, m, params)
		}}
	if o.temporal.address == "" {
		// This process runs the sessions, so it knows their tools and
		// providers. Temporal workers may be built with tools, and given
		// provider config, that the gateway lacks: there they decide.
		rpcOpts.Tools, rpcOpts.MCPServers = builtinToolNames(), mcpNames
		rpcOpts.CheckProvider = func(id, kind string) error { return providerError(endpoint.CheckUsable(hostOpts.resolver, id, kind)) }
		logMissingKeys(hostOpts.resolver, logger)
	}
	rpc := api.NewServerFor(hosts, rpcOpts)
	srv := &http.Server{
		Handler:           withHealth(withMetrics(rpc.Protect(web.WithAPI(rpc.Handler())), m, hosts, o.postgres != ""), ready, logger),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       idleConnTimeout,
	}
	logger.Info("cairn serving", "rpc", "http://"+ln.Addr().String()+"/rpc")
	logger.Info("inspector", "url", "http://"+ln.Addr().String()+"/")
	// Tests and scripts read the bound address from stdout.
	fmt.Fprintf(cmd.OutOrStdout(), "listening on %s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// openHostedStore connects the hosted store, refusing a schema this binary
// does not know, and its object storage when configured.
func openHostedStore(ctx context.Context, o serveOptions) (*postgres.DB, objstore.Store, error) {
	db, err := connectPostgres(ctx, o.postgres)
	if err != nil {
		return nil, nil, err
	}
	if err := db.CheckSchema(ctx); err != nil {
		db.Close()
		return nil, nil, err
	}
	if o.s3.Bucket == "" && o.s3.Endpoint == "" {
		return db, nil, nil
	}
	s3, err := objstore.NewS3(ctx, o.s3)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, s3, nil
}

// openHosted starts the hosted mode's per-universe hosts: local hosts that
// drive sessions in this process, or gateways to Temporal workflows. It
// returns what /readyz checks of them.
func openHosted(ctx context.Context, o serveOptions, hostOpts hostOptions) (*universeHosts, []readyCheck, func(), error) {
	db, objects, err := openHostedStore(ctx, o)
	if err != nil {
		return nil, nil, nil, err
	}
	ready := []readyCheck{postgresReady(db)}
	if hostOpts.metrics != nil {
		blobGauge(hostOpts.metrics, db.BlobBytes)
	}
	if objects != nil {
		ready = append(ready, objectsReady(objects))
	}
	if o.temporal.address != "" {
		c, err := o.temporal.dial(hostOpts.logger)
		if err != nil {
			db.Close()
			return nil, nil, nil, err
		}
		uh := newUniverseHosts(db, objects, gatewayStarter(c, o.temporal.queue, temporal.SessionArgs{HeartbeatTimeoutMs: o.heartbeatTimeout.Milliseconds()}))
		return uh, append(ready, temporalReady(c)), func() { uh.close(); c.Close(); db.Close() }, nil
	}
	uh := newUniverseHosts(db, objects, func(ctx context.Context, _ string, st *postgres.Store) (api.Host, func(), error) {
		h, err := startHost(ctx, st, st, st, hostOpts)
		if err != nil {
			return nil, nil, err
		}
		return h, h.Close, nil
	})
	if err := uh.startAll(ctx); err != nil {
		uh.close()
		db.Close()
		return nil, nil, nil, err
	}
	return uh, ready, func() { uh.close(); db.Close() }, nil
}

// heartbeatTimeoutFromEnv reads CAIRN_HEARTBEAT_TIMEOUT unless the flag was given.
func heartbeatTimeoutFromEnv(cmd *cobra.Command, o *serveOptions) error {
	if v := os.Getenv("CAIRN_HEARTBEAT_TIMEOUT"); v != "" && !cmd.Flags().Changed("heartbeat-timeout") {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("CAIRN_HEARTBEAT_TIMEOUT: %w", err)
		}
		o.heartbeatTimeout = d
	}
	if o.heartbeatTimeout < 0 || (o.heartbeatTimeout > 0 && o.heartbeatTimeout < 2*time.Second) {
		return fmt.Errorf("--heartbeat-timeout %s: use at least 2s (activities heartbeat about once a second)", o.heartbeatTimeout)
	}
	return nil
}

// listenHosts are the names a request may give in Host for the listen
// address: the name or IP it was given as and, on an unspecified address
// (0.0.0.0, ::), every address of the machine's interfaces.
func listenHosts(listen string, addr net.Addr) []string {
	var out []string
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" {
		if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
			out = append(out, host)
		}
	}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return out
	}
	if !tcp.IP.IsUnspecified() {
		return append(out, tcp.IP.String())
	}
	addrs, _ := net.InterfaceAddrs() // none known: only the names given serve
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			out = append(out, ipn.IP.String())
		}
	}
	return out
}

func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// providerError says in the API's words why a session may not use a provider.
func providerError(err error) error {
	var unknown *endpoint.UnknownProviderError
	var kind *endpoint.APIKindError
	var missing *endpoint.MissingKeyError
	switch {
	case errors.As(err, &missing) && missing.EnvVar != "":
		return fmt.Errorf("provider %q has no API key on this server: set %s in the environment of `cairn serve` (the server's, not the client's) and restart it", missing.ProviderID, missing.EnvVar)
	case errors.As(err, &missing):
		return fmt.Errorf("provider %q has no API key on this server: give it \"apiKeyEnv\" in the server's --config file", missing.ProviderID)
	case errors.As(err, &unknown):
		return fmt.Errorf("unknown provider %q: this server has no such provider configured", unknown.ProviderID)
	case errors.As(err, &kind):
		return fmt.Errorf("provider %q does not speak API kind %q; it speaks %s", kind.ProviderID, kind.APIKind, strings.Join(kind.Admitted, ", "))
	}
	return err
}

// logMissingKeys says at start which built-in providers have no key here,
// so a missing key is not first met by a user's run.
func logMissingKeys(r endpoint.Resolver, logger *slog.Logger) {
	for _, id := range []string{endpoint.OpenAIProviderID, endpoint.AnthropicProviderID} {
		var missing *endpoint.MissingKeyError
		if _, err := r.Resolve(id); errors.As(err, &missing) {
			logger.Warn("a built-in provider has no API key: sessions on it are refused until it is set in this server's environment",
				"provider", id, "env", missing.EnvVar)
		}
	}
}
