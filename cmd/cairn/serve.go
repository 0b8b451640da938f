package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/provider/endpoint"
)

func serveCommand() *cobra.Command {
	var dataDir, listen, configPath string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the embedded server: SQLite store under --data, JSON-RPC on --listen",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
			st, err := openStack(ctx, stackOptions{
				dataDir:  dataDir,
				resolver: endpoint.New(configPath, os.Getenv),
				logger:   logger,
			})
			if err != nil {
				return err
			}
			defer st.close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			srv := &http.Server{
				Handler:           api.NewServer(st.host, api.ServerOptions{APIKinds: st.kinds, Logger: logger}).Handler(),
				ReadHeaderTimeout: 10 * time.Second,
			}
			logger.Info("cairn serving", "rpc", "http://"+ln.Addr().String()+"/rpc", "data", dataDir)
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
		},
	}
	cmd.Flags().StringVar(&dataDir, "data", envOr("CAIRN_DATA", ".cairn"), "directory for everything the server stores (env CAIRN_DATA)")
	cmd.Flags().StringVar(&listen, "listen", envOr("CAIRN_LISTEN", defaultAddr), "address to serve JSON-RPC on (env CAIRN_LISTEN)")
	cmd.Flags().StringVar(&configPath, "config", os.Getenv("CAIRN_CONFIG"), "provider config file (env CAIRN_CONFIG)")
	return cmd
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
