// Package metrics is Cairn's Prometheus surface: what a process did (runs
// by status, turns, provider calls and their latency, tokens, prefix reuse,
// collector passes) and what it holds (sessions in memory, queued runs).
// Labels are API kinds, provider ids and outcomes, never a session's id or
// content.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/runtime"
)

// Metrics is one process's registry. It is a runtime.Observer.
type Metrics struct {
	reg             *prometheus.Registry
	runs            *prometheus.CounterVec
	turns           prometheus.Counter
	providerSeconds *prometheus.HistogramVec
	providerCalls   *prometheus.CounterVec
	tokens          *prometheus.CounterVec
	prefix          prometheus.Histogram
	gcPasses        *prometheus.CounterVec
	gcBytes         prometheus.Counter
	gcObjectErrors  prometheus.Counter
}

var _ runtime.Observer = (*Metrics)(nil)

// New returns a registry with Cairn's metrics and the Go runtime's and
// the process's own.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_runs_total",
			Help: "Runs that ended, by status (completed, failed, cancelled)."}, []string{"status"}),
		turns: prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_turns_total",
			Help: "Model turns planned."}),
		providerSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "cairn_provider_request_seconds",
			Help:    "Wall time of provider calls for generations, by API kind and provider.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}}, []string{"api_kind", "provider"}),
		providerCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_provider_requests_total",
			Help: "Provider calls for generations, by API kind, provider and outcome (ok, error)."}, []string{"api_kind", "provider", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_tokens_total",
			Help: "Tokens the providers reported, by kind: input (cached ones included), cached, output."}, []string{"kind"}),
		prefix: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cairn_request_prefix_fraction",
			Help:    "Fraction of a request's segment bytes that repeat the session's last request.",
			Buckets: []float64{0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1}}),
		gcPasses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_gc_passes_total",
			Help: "Background blob collector passes, by outcome (ok, error)."}, []string{"outcome"}),
		gcBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_gc_deleted_bytes_total",
			Help: "Bytes of blobs the background collector deleted."}),
		gcObjectErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_gc_object_errors_total",
			Help: "Objects the background collector failed to delete."}),
	}
	m.reg.MustRegister(m.runs, m.turns, m.providerSeconds, m.providerCalls, m.tokens, m.prefix,
		m.gcPasses, m.gcBytes, m.gcObjectErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, s := range []string{core.StatusCompleted, core.StatusFailed, core.StatusCancelled} {
		m.runs.WithLabelValues(s) // present at 0 from the start
	}
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Gauge adds a gauge read from f at each scrape.
func (m *Metrics) Gauge(name, help string, f func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
}

// ProviderCall counts a provider call for a generation and its wall time
// (compactions are not generations).
func (m *Metrics) ProviderCall(c runtime.ProviderCallInfo) {
	if c.CompactionID != "" {
		return
	}
	outcome := "ok"
	if c.Failed {
		outcome = "error"
	}
	m.providerSeconds.WithLabelValues(c.APIKind, c.ProviderID).Observe(c.Duration.Seconds())
	m.providerCalls.WithLabelValues(c.APIKind, c.ProviderID, outcome).Inc()
}

// ToolCall is not counted apart: tool calls are in the log.
func (m *Metrics) ToolCall(runtime.ToolCallInfo) {}

// Generated counts a generation's tokens and its request's prefix reuse.
func (m *Metrics) Generated(u core.Usage, prefixFraction float64) {
	m.tokens.WithLabelValues("input").Add(float64(u.InputTokens))
	m.tokens.WithLabelValues("cached").Add(float64(u.CachedInputTokens))
	m.tokens.WithLabelValues("output").Add(float64(u.OutputTokens))
	if prefixFraction >= 0 {
		m.prefix.Observe(prefixFraction)
	}
}

// Committed counts the runs that ended and the turns planned among events.
func (m *Metrics) Committed(_ string, events []core.Event) {
	for _, e := range events {
		switch e.Kind {
		case core.KindRunCompleted:
			m.runs.WithLabelValues(core.StatusCompleted).Inc()
		case core.KindRunFailed:
			m.runs.WithLabelValues(core.StatusFailed).Inc()
		case core.KindRunCancelled:
			m.runs.WithLabelValues(core.StatusCancelled).Inc()
		case core.KindTurnPlanned:
			m.turns.Inc()
		}
	}
}

// GCPass counts a background collector pass (retention.Collector.OnPass).
func (m *Metrics) GCPass(st retention.Stats, err error) {
	if err != nil {
		m.gcPasses.WithLabelValues("error").Inc()
		return
	}
	m.gcPasses.WithLabelValues("ok").Inc()
	m.gcBytes.Add(float64(st.BytesFreed))
	m.gcObjectErrors.Add(float64(st.ObjectErrors))
}
