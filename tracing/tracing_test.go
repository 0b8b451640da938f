package tracing

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
)

// A run's spans form one trace: the run, its turn under it, and the
// provider call and tool call under the turn, whichever process wrote
// them; a compaction is a span of its own. Attributes name the session,
// run and turn, never content.
func TestARunIsOneTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	// Two tracers, as a worker and a gateway: the ids still join.
	worker, host := New(sdktrace.WithSyncer(exp)), New(sdktrace.WithSyncer(exp))
	t0 := time.UnixMilli(1_700_000_000_000)
	ev := func(kind string, ms int64, joins ...string) core.Event {
		return core.Event{Kind: kind, ObservedAtMs: t0.UnixMilli() + ms, Joins: joins, Payload: []byte(`{"text":"secret content"}`)}
	}
	host.Committed("s1", []core.Event{ev(core.KindRunAccepted, 0, "run:r1"), ev(core.KindRunStarted, 1, "run:r1"), ev(core.KindTurnStarted, 1, "run:r1", "turn:r1/1")})
	worker.ProviderCall(runtime.ProviderCallInfo{SessionID: "s1", RunID: "r1", Turn: 1, APIKind: core.APIChatCompletions, ProviderID: "fake", Start: t0.Add(2 * time.Millisecond), Duration: 5 * time.Millisecond})
	worker.ToolCall(runtime.ToolCallInfo{SessionID: "s1", RunID: "r1", Turn: 1, CallID: "c1", Name: "lookup", Start: t0.Add(8 * time.Millisecond), Duration: time.Millisecond, Failed: true})
	worker.ProviderCall(runtime.ProviderCallInfo{SessionID: "s1", CompactionID: "cmp1", APIKind: core.APIChatCompletions, ProviderID: "fake", Start: t0, Duration: time.Millisecond})
	host.Committed("s1", []core.Event{ev(core.KindTurnCompleted, 12, "run:r1", "turn:r1/1"), ev(core.KindRunCompleted, 13, "run:r1")})

	spans := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		spans[s.Name] = s
	}
	run, turn, call, tool, compaction := spans["run"], spans["turn"], spans["provider call"], spans["tool call"], spans["compaction"]
	if len(spans) != 5 {
		t.Fatalf("spans: %v", spans)
	}
	tid := run.SpanContext.TraceID()
	for name, s := range map[string]tracetest.SpanStub{"turn": turn, "provider call": call, "tool call": tool} {
		if s.SpanContext.TraceID() != tid {
			t.Errorf("%s is not in the run's trace", name)
		}
	}
	if turn.Parent.SpanID() != run.SpanContext.SpanID() || call.Parent.SpanID() != turn.SpanContext.SpanID() || tool.Parent.SpanID() != turn.SpanContext.SpanID() {
		t.Fatal("the spans do not nest run → turn → calls")
	}
	if compaction.SpanContext.TraceID() == tid || compaction.Parent.IsValid() {
		t.Fatal("a compaction is a trace of its own")
	}
	if got := run.EndTime.Sub(run.StartTime); got != 13*time.Millisecond {
		t.Fatalf("the run span lasts %v, want 13ms", got)
	}
	if tool.Status.Code.String() != "Error" {
		t.Fatalf("the failed tool call's status is %v", tool.Status)
	}
	for _, s := range exp.GetSpans() {
		for _, a := range s.Attributes {
			if a.Value.Emit() == "secret content" {
				t.Fatalf("%s carries content", s.Name)
			}
		}
	}
	_ = host.Shutdown(context.Background())
}
