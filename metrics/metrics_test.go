package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/runtime"
)

// What the runtime reports becomes counters and histograms labelled by
// status, API kind, provider and outcome, never by session.
func TestMetricsCountWhatTheRuntimeReports(t *testing.T) {
	m := New()
	m.Committed("s1", []core.Event{
		{Joins: []string{"run:secret-run"}, Kind: core.KindTurnPlanned},
		{Joins: []string{"run:secret-run"}, Kind: core.KindRunCompleted},
		{Joins: []string{"run:secret-run"}, Kind: core.KindRunFailed},
		{Joins: []string{"run:secret-run"}, Kind: core.KindTurnPlanned},
	})
	m.ProviderCall(runtime.ProviderCallInfo{APIKind: core.APIChatCompletions, ProviderID: "fake", Duration: 300 * time.Millisecond})
	m.ProviderCall(runtime.ProviderCallInfo{APIKind: core.APIChatCompletions, ProviderID: "fake", Duration: time.Second, Failed: true})
	m.ProviderCall(runtime.ProviderCallInfo{CompactionID: "c1", APIKind: core.APIChatCompletions, ProviderID: "fake"}) // not a generation
	m.Generated(core.Usage{InputTokens: 100, CachedInputTokens: 60, OutputTokens: 7}, 0.97)
	m.Generated(core.Usage{InputTokens: 10}, -1) // no last request: no prefix figure
	m.GCPass(retention.Stats{BytesFreed: 4096, ObjectErrors: 1}, nil)
	m.Gauge("cairn_sessions_in_memory", "sessions", func() float64 { return 3 })
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	for _, want := range []string{
		`cairn_runs_total{status="completed"} 1`,
		`cairn_runs_total{status="failed"} 1`,
		`cairn_runs_total{status="cancelled"} 0`,
		`cairn_turns_total 2`,
		`cairn_provider_request_seconds_count{api_kind="chat_completions",provider="fake"} 2`,
		`cairn_provider_requests_total{api_kind="chat_completions",outcome="error",provider="fake"} 1`,
		`cairn_tokens_total{kind="input"} 110`,
		`cairn_tokens_total{kind="cached"} 60`,
		`cairn_tokens_total{kind="output"} 7`,
		`cairn_request_prefix_fraction_count 1`,
		`cairn_gc_passes_total{outcome="ok"} 1`,
		`cairn_gc_deleted_bytes_total 4096`,
		`cairn_gc_object_errors_total 1`,
		`cairn_sessions_in_memory 3`,
		`go_goroutines`,
	} {
		if !strings.Contains(text, want+"\n") && !strings.Contains(text, want+" ") {
			t.Errorf("missing %q", want)
		}
	}
	if strings.Contains(text, "secret-run") {
		t.Error("a run id reached the metrics")
	}
}
