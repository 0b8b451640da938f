package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/internal/sse"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/httpx"
)

func toStream(t *testing.T, body []byte) []byte {
	t.Helper()
	out, err := sse.Responses(body)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every recorded response, played as OpenAI streams it, is stored as the
// response itself: the bytes response.completed carries, the same entries,
// and the same next request.
func TestStreamAssemblesEveryRecordedResponse(t *testing.T) {
	for _, file := range payloadFiles(t) {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			body := readPayload(t, name)
			var heard strings.Builder
			assembled, err := assembleStream(bytes.NewReader(toStream(t, body)), func(d provider.Delta) {
				if d.Kind == provider.DeltaText {
					heard.WriteString(d.Text)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(assembled, compact(t, body)) {
				t.Fatalf("assembled:\n%.400s\nrecorded:\n%.400s", assembled, compact(t, body))
			}
			var rec struct {
				Output []struct {
					Type    string `json:"type"`
					Content []struct {
						Type, Text, Refusal string
					} `json:"content"`
				} `json:"output"`
			}
			if err := json.Unmarshal(body, &rec); err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			for _, it := range rec.Output {
				for _, c := range it.Content {
					text.WriteString(c.Text + c.Refusal)
				}
			}
			if heard.String() != text.String() {
				t.Fatalf("text deltas %q, want %q", heard.String(), text.String())
			}
			next := func(body []byte) []byte {
				b := newCtx(t)
				b.instructions("instructions.a", "Be brief.")
				b.user("question")
				b.decode(body)
				b.user("next question")
				return lower(t, b, request(b), LowerOptions{})
			}
			if s, u := next(assembled), next(body); !bytes.Equal(s, u) {
				t.Fatalf("next request after the stream:\n%s\nafter the whole answer:\n%s", s, u)
			}
		})
	}
}

// A stream cut before its final event, an error event, and a failed
// response each fail the generation the way the same answer would: a
// server error is retried, a refused prompt is not.
func TestStreamFailures(t *testing.T) {
	whole := toStream(t, readPayload(t, "reasoning-function-call.json"))
	cut := whole[:bytes.LastIndex(whole, []byte("event: response.completed"))]
	withEvent := func(e string) []byte { return append(cut[:len(cut):len(cut)], e+"\n\n"...) }
	replies := []struct {
		body      []byte
		retryable bool
	}{
		{cut, true},
		{withEvent(`data: {"type":"error","code":"server_error","message":"The server had an error","param":null,"sequence_number":9}`), true},
		{withEvent(`data: {"type":"response.failed","sequence_number":9,"response":{"id":"resp_1","status":"failed","error":{"code":"invalid_prompt","message":"no"},"output":[]}}`), false},
		{withEvent(`data: {"type":"response.failed","sequence_number":9,"response":{"id":"resp_1","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"},"output":[]}}`), true},
		{withEvent(`data: {"type":"response.completed","response":`), false}, // not JSON
	}
	f := &fakeResponses{wantKey: testKey}
	for _, r := range replies {
		f.queue(reply{status: 200, headers: map[string]string{"Content-Type": "text/event-stream"}, body: r.body})
	}
	ep := f.start(t)
	ep.Stream = true
	b := newCtx(t)
	b.user("q")
	for i, r := range replies {
		_, err := adapterFor(ep).Generate(context.Background(), b.blobs, fakeRequest(b))
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Retryable != r.retryable {
			t.Fatalf("reply %d: %v, want a provider error with retryable %v", i, err, r.retryable)
		}
	}
	if _, err := assembleStream(bytes.NewReader(cut), nil); !errors.Is(err, httpx.ErrStreamIncomplete) {
		t.Fatalf("a cut stream: %v", err)
	}
}

// An endpoint that streams gets "stream":true at the end of the request,
// its stream stored as the whole response would be; "stream": false in
// the session's parameters asks for the whole response.
func TestAdapterStreams(t *testing.T) {
	body := readPayload(t, "reasoning-function-call.json")
	f := &fakeResponses{wantKey: testKey}
	f.queue(reply{status: 200, body: body},
		reply{status: 200, headers: map[string]string{"Content-Type": "text/event-stream"}, body: toStream(t, body)},
		reply{status: 200, body: body})
	ep := f.start(t)
	ctx := context.Background()
	b := newCtx(t)
	b.user("q")
	plain, err := adapterFor(ep).Generate(ctx, b.blobs, fakeRequest(b))
	if err != nil {
		t.Fatal(err)
	}
	ep.Stream = true
	var args strings.Builder
	req := fakeRequest(b)
	req.OnDelta = func(d provider.Delta) {
		if d.Kind == provider.DeltaToolArguments {
			args.WriteString(d.Text)
		}
	}
	streamed, err := adapterFor(ep).Generate(ctx, b.blobs, req)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(streamed.Entries, streamed.ToolCalls, streamed.Usage, streamed.Finish) != fmt.Sprint(plain.Entries, plain.ToolCalls, plain.Usage, plain.Finish) {
		t.Fatalf("streamed %+v\nwhole %+v", streamed, plain)
	}
	stored, err := b.blobs.Get(ctx, streamed.ToolCalls[0].Arguments.Digest)
	if err != nil || args.String() != string(stored) {
		t.Fatalf("argument deltas %q, stored %q", args.String(), stored)
	}
	off := fakeRequest(b)
	off.Params = json.RawMessage(`{"version":1,"stream":false}`)
	if _, err := adapterFor(ep).Generate(ctx, b.blobs, off); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if bytes.Contains(reqs[0], []byte(`"stream"`)) || !bytes.HasSuffix(reqs[1], []byte(`,"stream":true}`)) || bytes.Contains(reqs[2], []byte(`"stream"`)) {
		t.Fatalf("requests:\n%s\n%s\n%s", reqs[0], reqs[1], reqs[2])
	}
	if !bytes.Equal(bytes.TrimSuffix(reqs[1], []byte(`,"stream":true}`)), bytes.TrimSuffix(reqs[0], []byte(`}`))) {
		t.Fatal("the streamed request is not the whole one with stream added")
	}
}
