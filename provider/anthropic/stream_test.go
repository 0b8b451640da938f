package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/internal/sse"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/httpx"
)

func toStream(t *testing.T, body []byte) []byte {
	t.Helper()
	out, err := sse.Anthropic(body)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every recorded response, played as Anthropic streams it, is assembled
// into the message the same request gives unstreamed: JSON-equal, its
// blocks stored as the same blobs, and the next request the same bytes.
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
			var want, got any
			if json.Unmarshal(body, &want) != nil || json.Unmarshal(assembled, &got) != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("assembled is not JSON-equal to the recorded message:\n%.2000s", assembled)
			}
			if a, w := compact(t, assembled), compact(t, body); !bytes.Equal(a, w) {
				i := 0
				for i < len(a) && i < len(w) && a[i] == w[i] {
					i++
				}
				t.Fatalf("member order differs at byte %d:\n%.200s\n%.200s", i, a[i:], w[i:])
			}
			var text strings.Builder
			for _, b := range want.(map[string]any)["content"].([]any) {
				if b.(map[string]any)["type"] == "text" {
					text.WriteString(b.(map[string]any)["text"].(string))
				}
			}
			if heard.String() != text.String() {
				t.Fatalf("text deltas %q, want %q", heard.String(), text.String())
			}
			next := func(body []byte) []byte {
				b := newCtx(t)
				b.instructions("instructions.base", "You are terse.")
				b.user("question")
				b.decode(body)
				b.user("next question")
				return b.lower()
			}
			if s, u := next(assembled), next(body); !bytes.Equal(s, u) {
				t.Fatalf("next request after the stream:\n%s\nafter the whole answer:\n%s", s, u)
			}
		})
	}
}

// What a stream may hold besides the recorded shapes: a start that
// already carries text, a signature without an empty one at the start,
// members only a delta names, a compaction block, unknown events.
func TestStreamAssemblesWhatStartsAndDeltasSay(t *testing.T) {
	events := []string{
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig=="}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"compaction","content":null}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"compaction_delta","content":"summary"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"text","text":"Hel"}}`,
		`{"type":"brand_new_event","x":1}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"lo"}}`,
		`{"type":"content_block_stop","index":2}`,
		`{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_1","name":"noop","input":{}}}`,
		`{"type":"content_block_stop","index":3}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null,"container":{"id":"c"}},"usage":{"output_tokens":9,"cache_read_input_tokens":3}}`,
		`{"type":"message_stop"}`,
	}
	stream := "data: " + strings.Join(events, "\n\ndata: ") + "\n\n"
	var deltas []string
	out, err := assembleStream(strings.NewReader(stream), func(d provider.Delta) { deltas = append(deltas, d.Kind+":"+d.Text) })
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[` +
		`{"type":"thinking","thinking":"hm","signature":"sig=="},{"type":"compaction","content":"summary"},` +
		`{"type":"text","text":"Hello"},{"type":"tool_use","id":"toolu_1","name":"noop","input":{}}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":9,"cache_read_input_tokens":3},"container":{"id":"c"}}`
	if string(out) != want {
		t.Fatalf("assembled\n%s\nwant\n%s", out, want)
	}
	if fmt.Sprint(deltas) != "[reasoning:hm text:lo]" {
		t.Fatalf("deltas %v", deltas)
	}
}

// A stream cut before message_stop, an error event, and a tool input that
// is not JSON each fail the generation the way the same answer would.
func TestStreamFailures(t *testing.T) {
	body := readPayload(t, "thinking-tool-use.json")
	whole := toStream(t, body)
	cut := whole[:bytes.LastIndex(whole, []byte("event: message_stop"))]
	if _, err := assembleStream(bytes.NewReader(cut), nil); !errors.Is(err, httpx.ErrStreamIncomplete) {
		t.Fatalf("a cut stream: %v", err)
	}
	overloaded := append(cut[:len(cut):len(cut)], "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"...)
	invalid := "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"content\":[]}}\n\n" +
		"data: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad\"}}\n\n"
	badInput := "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"content\":[]}}\n\n" +
		"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"noop\",\"input\":{}}}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n" +
		"data: {\"type\":\"message_stop\"}\n\n"
	sse := map[string]string{"Content-Type": "text/event-stream"}
	f := &fakeMessages{t: t, wantKey: testKey, replies: []reply{
		{status: 200, headers: sse, body: cut},
		{status: 200, headers: sse, body: overloaded},
		{status: 200, headers: sse, body: []byte(invalid)},
		{status: 200, headers: sse, body: []byte(badInput)},
	}}
	_, ep := f.start(t)
	ep.Stream = true
	b := newCtx(t)
	b.user("q")
	for i, retryable := range []bool{true, true, false, false} {
		_, err := adapterFor(ep).Generate(context.Background(), b.blobs, b.request())
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Retryable != retryable {
			t.Fatalf("reply %d: %v, want a provider error with retryable %v", i, err, retryable)
		}
	}
}

// An endpoint that streams gets "stream":true at the end of the request
// and its stream stored as the whole answer; "stream": false in the
// session's parameters asks for the whole answer instead.
func TestAdapterStreams(t *testing.T) {
	body := readPayload(t, "thinking-tool-use.json")
	f := &fakeMessages{t: t, wantKey: testKey, replies: []reply{
		{status: 200, body: body},
		{status: 200, headers: map[string]string{"Content-Type": "text/event-stream"}, body: toStream(t, body)},
		{status: 200, body: body},
	}}
	_, ep := f.start(t)
	ctx := context.Background()
	b := newCtx(t)
	b.user("q")
	plain, err := adapterFor(ep).Generate(ctx, b.blobs, b.request())
	if err != nil {
		t.Fatal(err)
	}
	ep.Stream = true
	var deltas []provider.Delta
	req := b.request()
	req.OnDelta = func(d provider.Delta) { deltas = append(deltas, d) }
	streamed, err := adapterFor(ep).Generate(ctx, b.blobs, req)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(streamed.Entries, streamed.ToolCalls, streamed.Usage, streamed.Finish) != fmt.Sprint(plain.Entries, plain.ToolCalls, plain.Usage, plain.Finish) {
		t.Fatalf("streamed %+v\nwhole %+v", streamed, plain)
	}
	if len(deltas) == 0 {
		t.Fatal("no deltas heard")
	}
	off := b.request()
	off.Params = json.RawMessage(`{"version":1,"stream":false}`)
	if _, err := adapterFor(ep).Generate(ctx, b.blobs, off); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if bytes.Contains(reqs[0], []byte(`"stream"`)) || !bytes.HasSuffix(reqs[1], []byte(`],"stream":true}`)) || bytes.Contains(reqs[2], []byte(`"stream"`)) {
		t.Fatalf("requests:\n%s\n%s\n%s", reqs[0], reqs[1], reqs[2])
	}
	if !bytes.Equal(bytes.TrimSuffix(reqs[1], []byte(`,"stream":true}`)), bytes.TrimSuffix(reqs[0], []byte(`}`))) {
		t.Fatal("the streamed request is not the whole one with stream added")
	}
}
