package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/metrics"
	"github.com/cairn-agents/cairn/provider/transcribe"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/temporal"
	"github.com/cairn-agents/cairn/store/postgres"
)

// temporalFlags select the Temporal server and task queue.
type temporalFlags struct {
	address, namespace, queue string
}

func (f *temporalFlags) register(cmd *cobra.Command, usage string) {
	cmd.Flags().StringVar(&f.address, "temporal", os.Getenv("CAIRN_TEMPORAL"), usage+" (env CAIRN_TEMPORAL)")
	cmd.Flags().StringVar(&f.namespace, "temporal-namespace", envOr("CAIRN_TEMPORAL_NAMESPACE", "default"), "Temporal namespace (env CAIRN_TEMPORAL_NAMESPACE)")
	cmd.Flags().StringVar(&f.queue, "task-queue", envOr("CAIRN_TASK_QUEUE", temporal.DefaultQueue), "Temporal task queue (env CAIRN_TASK_QUEUE)")
}

func (f *temporalFlags) dial(logger *slog.Logger) (client.Client, error) {
	c, err := client.Dial(client.Options{HostPort: f.address, Namespace: f.namespace, Logger: tlog.NewStructuredLogger(logger)})
	if err != nil {
		return nil, fmt.Errorf("connecting to Temporal at %s: %w", f.address, err)
	}
	return c, nil
}

// temporalHost adds the workflow's status query to the gateway, so
// session/read does not read the log.
type temporalHost struct{ *temporal.Gateway }

func (h temporalHost) SessionStatus(ctx context.Context, sessionID string) (api.SessionReadResult, error) {
	st, err := h.Status(ctx, sessionID)
	if err != nil {
		return api.SessionReadResult{}, err
	}
	out := api.SessionReadResult{SessionID: st.SessionID, Status: core.SessionStatusOpen, Model: st.Model, Tools: st.Tools, ClientTools: st.ClientTools, Approvals: api.ApprovalMap(st.Approvals),
		Links: api.LinkParamsOf(st.Links), ContextRevision: st.ContextRevision, ConfigRevision: st.ConfigRevision, Head: st.Head, QueuedRuns: []api.RunSummary{}, Compaction: st.Compaction, AsOfSeq: st.AsOfSeq, Parent: st.Parent}
	if st.Closed {
		out.Status = core.SessionStatusClosed
	}
	if st.ActiveRun != "" {
		status := st.ActiveRunStatus
		if status == "" { // a worker that does not report it yet
			status = core.StatusRunning
		}
		out.ActiveRun = &api.RunSummary{RunID: st.ActiveRun, Status: status}
	}
	for _, id := range st.Queued {
		out.QueuedRuns = append(out.QueuedRuns, api.RunSummary{RunID: id, Status: core.StatusQueued})
	}
	return out, nil
}

// gatewayStarter makes each universe's host a Temporal gateway; args is the
// template of the session workflows' start arguments (timeouts, limits).
func gatewayStarter(c client.Client, queue string, args temporal.SessionArgs) startUniverse {
	return func(_ context.Context, slug string, st *postgres.Store) (api.Host, func(), error) {
		return temporalHost{temporal.NewGateway(c, queue, slug, st, args)}, func() {}, nil
	}
}

func workerCommand() *cobra.Command {
	var o serveOptions
	var tf temporalFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run session workflows and their activities (model and tool calls) for a Temporal deployment",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			stopProfile, err := cpuProfile()
			if err != nil {
				return err
			}
			defer stopProfile()
			return runWorker(ctx, cmd, o, tf)
		},
	}
	tf.register(cmd, "Temporal frontend `HOST:PORT`")
	f := cmd.Flags()
	f.StringVar(&o.configPath, "config", os.Getenv("CAIRN_CONFIG"), "provider config file (env CAIRN_CONFIG)")
	postgresFlag(cmd, &o.postgres, "PostgreSQL URL of the hosted store")
	s3Flags(cmd, &o)
	mcpCommandsFlag(cmd, &o.mcpCommands)
	metricsFlag(cmd, &o.metricsListen)
	retryBudgetFlag(cmd, &o.retryBudget, "the worker")
	return cmd
}

func runWorker(ctx context.Context, cmd *cobra.Command, o serveOptions, tf temporalFlags) error {
	if tf.address == "" {
		return fmt.Errorf("--temporal HOST:PORT (or CAIRN_TEMPORAL) is required")
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	db, objects, err := openHostedStore(ctx, o)
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := tf.dial(logger)
	if err != nil {
		return err
	}
	defer c.Close()
	stores := &universeStores{db: db, objects: objects}
	tools, err := builtinTools()
	if err != nil {
		return err
	}
	acts := temporal.NewActivities(func(ctx context.Context, universe string) (temporal.Store, error) {
		return stores.get(ctx, universe)
	}, adapters(providerResolver(o), nil), tools)
	acts.Transcriber = transcribe.New(providerResolver(o), providerClient(nil))
	budget, err := resolveRetryBudget(cmd, o.retryBudget)
	if err != nil {
		return err
	}
	acts.Retry = runtime.ProviderRetry{Budget: budget}
	mcp, _, closeMCP, err := openMCP(o.configPath, o.mcpCommands, logger)
	if err != nil {
		return err
	}
	defer closeMCP()
	acts.MCP = mcp
	acts.Client, acts.Queue = c, tf.queue
	m := metrics.New()
	observer, stopTracing, err := observers(ctx, m, logger)
	if err != nil {
		return err
	}
	defer stopTracing()
	acts.Observer = observer
	if o.metricsListen != "" {
		stopMetrics, err := serveMetrics(ctx, o.metricsListen, m, logger)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	w := temporal.NewWorker(c, tf.queue, acts)
	if err := w.Start(); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "worker polling %s on %s\n", tf.queue, tf.address)
	<-ctx.Done()
	w.Stop()
	return nil
}
