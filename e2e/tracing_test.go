package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/cairn-agents/cairn/api"
)

// With OTEL_EXPORTER_OTLP_ENDPOINT set, `cairn serve` exports a run's
// spans over OTLP/HTTP: the run, its turn and the provider call, in one
// trace, with the session and run as attributes and no content.
func TestE2E_TracesOverOTLP(t *testing.T) {
	var mu sync.Mutex
	type span struct{ name, trace, parent, id string }
	var spans []span
	var bodies [][]byte
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		bodies = append(bodies, body)
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans = append(spans, span{s.Name, string(s.TraceId), string(s.ParentSpanId), string(s.SpanId)})
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	t.Cleanup(collector.Close)
	fake := newFakeChat(t, fakeKey)
	fake.script(fakeStep{body: textResponse("chatcmpl-tr", "Traced, with words nobody should export.")})
	dir := t.TempDir()
	srv := startServeWith(t, []string{"--data", filepath.Join(dir, "data"), "--config", writeProviderConfig(t, dir, fake)},
		"FAKE_CHAT_KEY="+fakeKey, "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL, "OTEL_BSP_SCHEDULE_DELAY=50")
	c := srv.client()
	ctx := context.Background()
	created, err := c.CreateSession(ctx, api.CreateSessionParams{SessionID: "traced", Model: fakeModel()})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.StartRun(ctx, api.RunStartParams{SessionID: created.SessionID, Input: textInput("Trace me.")})
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, c, created.SessionID, run.RunID)
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		var names []string
		byName := map[string]span{}
		for _, s := range spans {
			names = append(names, s.name)
			byName[s.name] = s
		}
		mu.Unlock()
		if slices.Contains(names, "run") && slices.Contains(names, "turn") && slices.Contains(names, "provider call") {
			r, tu, p := byName["run"], byName["turn"], byName["provider call"]
			if r.trace != tu.trace || tu.trace != p.trace || tu.parent != r.id || p.parent != tu.id {
				t.Fatalf("the spans do not form one trace run → turn → provider call: %+v", byName)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spans exported: %v", names)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, b := range bodies {
		if bytes.Contains(b, []byte("nobody should export")) || bytes.Contains(b, []byte("Trace me.")) {
			t.Fatal("a span carries the conversation's content")
		}
	}
}
