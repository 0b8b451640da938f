package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/metrics"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/tracing"
)

// metricsFlag adds --metrics-listen (env CAIRN_METRICS_LISTEN).
func metricsFlag(cmd *cobra.Command, addr *string) {
	cmd.Flags().StringVar(addr, "metrics-listen", envOr("CAIRN_METRICS_LISTEN", ""),
		"also serve GET /metrics (Prometheus), without a key, on this address, e.g. 127.0.0.1:9420 (env CAIRN_METRICS_LISTEN)")
}

// loadGauges adds the gauges of what a process holds, read from load.
func loadGauges(m *metrics.Metrics, load func() (sessions, queuedRuns int)) {
	m.Gauge("cairn_sessions_in_memory", "Sessions this process holds in memory.", func() float64 {
		s, _ := load()
		return float64(s)
	})
	m.Gauge("cairn_queued_runs", "Runs waiting in the queues of the sessions in memory.", func() float64 {
		_, q := load()
		return float64(q)
	})
}

// blobGauge adds the gauge of the bytes the blob catalog holds, read
// from bytes at each scrape (NaN when the store does not answer).
func blobGauge(m *metrics.Metrics, bytes func(context.Context) (int64, error)) {
	m.Gauge("cairn_blob_bytes", "Bytes of the blobs the store holds, by their sizes.", func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		n, err := bytes(ctx)
		if err != nil {
			return math.NaN()
		}
		return float64(n)
	})
}

// withMetrics serves GET /metrics beside next. In the embedded mode it
// needs no key, as nothing else there does; in hosted mode it needs a
// valid API key (any universe's), since it counts every universe's work.
func withMetrics(next http.Handler, m *metrics.Metrics, hosts api.Hosts, keyed bool) http.Handler {
	mux := http.NewServeMux()
	h := m.Handler()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if keyed {
			if _, err := hosts.HostFor(r.Context(), api.BearerToken(r)); err != nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
				http.Error(w, "a valid API key is required (or serve metrics apart with --metrics-listen)", http.StatusUnauthorized)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
	mux.Handle("/", next)
	return mux
}

// serveMetrics serves GET /metrics alone on addr until ctx ends.
func serveMetrics(ctx context.Context, addr string, m *metrics.Metrics, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idleConnTimeout}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics listener", "err", err)
		}
	}()
	logger.Info("metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return func() {
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}, nil
}

// observers is what hears the runtime: the metrics, and the traces when
// OTEL_EXPORTER_OTLP_ENDPOINT names a collector. stop flushes the traces.
func observers(ctx context.Context, m *metrics.Metrics, logger *slog.Logger) (runtime.Observer, func(), error) {
	tr, err := tracing.FromEnv(ctx, os.Getenv)
	if err != nil {
		return nil, nil, fmt.Errorf("OpenTelemetry tracing: %w", err)
	}
	if tr == nil {
		return m, func() {}, nil
	}
	logger.Info("tracing", "exporter", "otlp/http")
	return runtime.Observers{m, tr}, func() {
		flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tr.Shutdown(flush)
	}, nil
}
