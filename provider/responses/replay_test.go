package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/replay"
)

// TestReplayCassette drives the live adapter path (lowering, transport,
// classification, decoding) through a replay cassette assembled from the
// shared recorded bodies, read in place.
func TestReplayCassette(t *testing.T) {
	c := &replay.Cassette{Format: replay.Format, Version: replay.Version, Note: "shared responses payloads + one scripted 429",
		Interactions: []replay.Interaction{
			{Status: 200, Body: json.RawMessage(readPayload(t, "parallel-function-calls.json"))},
			{Status: 429, Headers: map[string]string{"Retry-After": "3"}, Body: json.RawMessage(`{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}`)},
			{Status: 200, Body: json.RawMessage(readPayload(t, "file-search-citations.json"))},
		}}
	// The cassette survives its own file format.
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if c, err = replay.Parse(data); err != nil {
		t.Fatal(err)
	}
	tr := replay.New(c)
	tr.RecordRequests = true
	a := New(endpoint.Static{"openai": {BaseURL: "https://api.openai.com/v1", APIKey: testKey}}, &http.Client{Transport: tr})

	b := newCtx(t)
	b.instructions("instructions.a", "Use tools.")
	b.user("Where is London?")
	req := func() provider.Request {
		r := fakeRequest(b)
		r.Model.ProviderID = "openai"
		return r
	}

	out, err := a.Generate(context.Background(), b.blobs, req())
	if err != nil {
		t.Fatal(err)
	}
	if len(out.ToolCalls) != 2 {
		t.Fatalf("turn 1: %+v", out)
	}
	b.admit(out.Entries, false)
	for _, call := range out.ToolCalls {
		b.toolResult(call.CallID, call.Name, "51.5074 N, 0.1278 W")
	}

	_, err = a.Generate(context.Background(), b.blobs, req())
	var pe *provider.Error
	if !errors.As(err, &pe) || !pe.Retryable || pe.Status != 429 || pe.RetryAfter != 3*time.Second {
		t.Fatalf("turn 2, attempt 1: %v", err)
	}
	out, err = a.Generate(context.Background(), b.blobs, req()) // the host retries
	if err != nil {
		t.Fatal(err)
	}
	if out.Usage.CachedInputTokens != 2304 || len(out.Entries) != 4 {
		t.Fatalf("turn 2: %+v", out)
	}

	// More requests than recorded: terminal, so a host does not retry it.
	_, err = a.Generate(context.Background(), b.blobs, req())
	if !errors.As(err, &pe) || pe.Retryable || !strings.Contains(pe.Message, "cassette exhausted") {
		t.Fatalf("exhausted: %v", err)
	}

	reqs := tr.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	if !bytes.Equal(reqs[1], reqs[2]) {
		t.Fatal("a retry did not send the same bytes")
	}
	p := inputPrefix(t, reqs[0])
	if !bytes.HasPrefix(inputPrefix(t, reqs[1]), append(p[:len(p):len(p)], ',')) {
		t.Fatal("turn 2 does not extend turn 1")
	}
	if v := inputViolation(parseRequest(t, reqs[1]).Input); v != "" {
		t.Fatal(v)
	}
}
