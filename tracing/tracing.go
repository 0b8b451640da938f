// Package tracing exports OpenTelemetry traces of what Cairn does: a span
// per run, its turns under it, and under each turn its provider calls and
// tool calls; compactions are spans of their own. Spans carry the
// session, run and turn as attributes, never content.
//
// The host loop is event-driven, so no span is open while work waits: a
// run's and a turn's spans are written when their end is committed, from
// the times of their start and end events, and the ids of a run's trace
// and of its run and turn spans are derived from the session and run ids,
// so a provider call on a worker joins the trace of a run a gateway
// accepted.
package tracing

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
)

// Tracer is a runtime.Observer that writes spans.
type Tracer struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer

	mu     sync.Mutex
	starts map[string]time.Time // "run R" and "turn R/N" of sessions in flight → start
}

var _ runtime.Observer = (*Tracer)(nil)

// FromEnv returns a Tracer exporting over OTLP/HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set, configured by the standard OTEL_EXPORTER_OTLP_* variables, and nil
// (no tracing) otherwise.
func FromEnv(ctx context.Context, getenv func(string) string) (*Tracer, error) {
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	return New(sdktrace.WithBatcher(exp)), nil
}

// New returns a Tracer over a provider with opts (an exporter, say).
func New(opts ...sdktrace.TracerProviderOption) *Tracer {
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithIDGenerator(ids{}))...)
	return &Tracer{tp: tp, tracer: tp.Tracer("github.com/cairn-agents/cairn"), starts: map[string]time.Time{}}
}

// Shutdown flushes the spans not yet exported.
func (t *Tracer) Shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }

// ProviderCall writes a provider call's span: under its turn for a
// generation, alone for a compaction.
func (t *Tracer) ProviderCall(c runtime.ProviderCallInfo) {
	name, ctx := "provider call", context.Background()
	attrs := []attribute.KeyValue{attribute.String("cairn.session.id", c.SessionID), attribute.String("cairn.api_kind", c.APIKind),
		attribute.String("cairn.provider", c.ProviderID)}
	if c.CompactionID != "" {
		name = "compaction"
		attrs = append(attrs, attribute.String("cairn.compaction.id", c.CompactionID))
	} else {
		ctx = underTurn(c.SessionID, c.RunID, c.Turn)
		attrs = append(attrs, attribute.String("cairn.run.id", c.RunID), attribute.Int("cairn.turn", c.Turn))
	}
	t.span(ctx, name, c.Start, c.Duration, c.Failed, attrs)
}

// ToolCall writes a tool call's span under its turn.
func (t *Tracer) ToolCall(c runtime.ToolCallInfo) {
	t.span(underTurn(c.SessionID, c.RunID, c.Turn), "tool call", c.Start, c.Duration, c.Failed, []attribute.KeyValue{
		attribute.String("cairn.session.id", c.SessionID), attribute.String("cairn.run.id", c.RunID), attribute.Int("cairn.turn", c.Turn),
		attribute.String("cairn.tool", c.Name), attribute.String("cairn.call.id", c.CallID)})
}

// Generated adds nothing to the spans.
func (t *Tracer) Generated(core.Usage, float64) {}

// Committed writes a run's span when its end is committed, and a turn's
// when it completes, from their start events' times.
func (t *Tracer) Committed(sessionID string, events []core.Event) {
	for _, e := range events {
		switch e.Kind {
		case core.KindRunAccepted, core.KindRunStarted, core.KindTurnStarted, core.KindTurnCompleted,
			core.KindRunCompleted, core.KindRunFailed, core.KindRunCancelled:
		default:
			continue // most events open or close no span
		}
		run, turn := joined(e.Joins)
		at := time.UnixMilli(e.ObservedAtMs)
		switch e.Kind {
		case core.KindRunAccepted, core.KindRunStarted: // from its acceptance: a queued run waits in its span
			t.started("run "+sessionID+"/"+run, at)
		case core.KindTurnStarted:
			t.started("turn "+sessionID+"/"+run+"/"+strconv.Itoa(turn), at)
		case core.KindTurnCompleted:
			if start, ok := t.ended("turn " + sessionID + "/" + run + "/" + strconv.Itoa(turn)); ok {
				ctx := withIDs(context.Background(), traceID(sessionID, run), turnSpanID(sessionID, run, turn))
				ctx = trace.ContextWithRemoteSpanContext(ctx, spanContext(sessionID, run, runSpanID(sessionID, run)))
				t.span(ctx, "turn", start, at.Sub(start), false, []attribute.KeyValue{attribute.String("cairn.session.id", sessionID),
					attribute.String("cairn.run.id", run), attribute.Int("cairn.turn", turn)})
			}
		case core.KindRunCompleted, core.KindRunFailed, core.KindRunCancelled:
			if start, ok := t.ended("run " + sessionID + "/" + run); ok {
				ctx := withIDs(context.Background(), traceID(sessionID, run), runSpanID(sessionID, run))
				t.span(ctx, "run", start, at.Sub(start), e.Kind == core.KindRunFailed, []attribute.KeyValue{
					attribute.String("cairn.session.id", sessionID), attribute.String("cairn.run.id", run),
					attribute.String("cairn.run.status", strings.TrimPrefix(e.Kind, "run."))})
			}
		}
	}
}

func (t *Tracer) started(key string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.starts[key]; !seen && len(t.starts) < maxInFlight { // a bound: ends lost to a crash must not grow it forever
		t.starts[key] = at
	}
}

func (t *Tracer) ended(key string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	start, ok := t.starts[key]
	delete(t.starts, key)
	return start, ok
}

// maxInFlight bounds the runs and turns whose start a Tracer remembers.
const maxInFlight = 100_000

func (t *Tracer) span(ctx context.Context, name string, start time.Time, d time.Duration, failed bool, attrs []attribute.KeyValue) {
	_, s := t.tracer.Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	if failed {
		s.SetStatus(codes.Error, name+" failed")
	}
	s.End(trace.WithTimestamp(start.Add(d)))
}

// joined reads the run and turn an event joins ("run:R", "turn:R/N").
func joined(joins []string) (run string, turn int) {
	for _, j := range joins {
		if r, ok := strings.CutPrefix(j, "run:"); ok {
			run = r
		}
		if rt, ok := strings.CutPrefix(j, "turn:"); ok {
			if i := strings.LastIndexByte(rt, '/'); i >= 0 {
				run = rt[:i]
				turn, _ = strconv.Atoi(rt[i+1:])
			}
		}
	}
	return run, turn
}

// A run's trace and its run and turn spans have ids derived from the
// session and run ids: any process can name them.
func digest(parts ...string) [32]byte { return sha256.Sum256([]byte(strings.Join(parts, "\x00"))) }

func traceID(sessionID, runID string) trace.TraceID {
	d := digest("cairn trace", sessionID, runID)
	return trace.TraceID(d[:16])
}

func runSpanID(sessionID, runID string) trace.SpanID {
	d := digest("cairn run span", sessionID, runID)
	return trace.SpanID(d[:8])
}

func turnSpanID(sessionID, runID string, turn int) trace.SpanID {
	d := digest("cairn turn span", sessionID, runID, strconv.Itoa(turn))
	return trace.SpanID(d[:8])
}

func spanContext(sessionID, runID string, span trace.SpanID) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID(sessionID, runID), SpanID: span,
		TraceFlags: trace.FlagsSampled, Remote: true})
}

// underTurn is the context of a span under a turn's span.
func underTurn(sessionID, runID string, turn int) context.Context {
	return trace.ContextWithRemoteSpanContext(context.Background(), spanContext(sessionID, runID, turnSpanID(sessionID, runID, turn)))
}

// ids generates random ids, except for a span whose ids the context fixes
// (a run's or a turn's).
type ids struct{}

type fixedIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

type fixedKey struct{}

func withIDs(ctx context.Context, t trace.TraceID, s trace.SpanID) context.Context {
	return context.WithValue(ctx, fixedKey{}, fixedIDs{t, s})
}

func (ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if f, ok := ctx.Value(fixedKey{}).(fixedIDs); ok {
		return f.trace, f.span
	}
	var t trace.TraceID
	_, _ = rand.Read(t[:])
	return t, randomSpanID()
}

func (ids) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if f, ok := ctx.Value(fixedKey{}).(fixedIDs); ok {
		return f.span
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var b [8]byte
	_, _ = rand.Read(b[:])
	if binary.BigEndian.Uint64(b[:]) == 0 {
		b[7] = 1
	}
	return trace.SpanID(b)
}
