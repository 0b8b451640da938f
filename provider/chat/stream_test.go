package chat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/internal/sse"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/httpx"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// toStream plays a recorded response as the provider streams it.
func toStream(t *testing.T, body []byte) []byte {
	t.Helper()
	out, err := sse.Chat(body)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withoutCallIndex drops a non-streamed tool call's "index", which a
// stream numbers every call with and so never tells apart from framing.
func withoutCallIndex(t *testing.T, body []byte) []byte {
	t.Helper()
	// edit rewrites the member name of ms with f applied to its value.
	edit := func(ms []rawjson.Member, name string, f func([]byte) []byte) []byte {
		for i := range ms {
			if ms[i].Name == name {
				ms[i].Value = f(ms[i].Value)
			}
		}
		var b bytes.Buffer
		rawjson.WriteObject(&b, ms)
		return b.Bytes()
	}
	array := func(raw []byte, f func([]byte) []byte) []byte {
		els, err := rawjson.ArrayElements(raw)
		if err != nil {
			return raw
		}
		for i := range els {
			els[i] = f(els[i])
		}
		return append(append([]byte("["), bytes.Join(els, []byte(","))...), ']')
	}
	object := func(raw []byte) []rawjson.Member {
		ms, err := rawjson.ObjectMembers(raw)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	return edit(object(body), "choices", func(v []byte) []byte {
		return array(v, func(choice []byte) []byte {
			return edit(object(choice), "message", func(msg []byte) []byte {
				return edit(object(msg), "tool_calls", func(calls []byte) []byte {
					if rawjson.IsNull(calls) {
						return calls
					}
					return array(calls, func(call []byte) []byte {
						var kept []rawjson.Member
						for _, m := range object(call) {
							if m.Name != "index" {
								kept = append(kept, m)
							}
						}
						var b bytes.Buffer
						rawjson.WriteObject(&b, kept)
						return b.Bytes()
					})
				})
			})
		})
	})
}

// Every recorded response, played as a stream, is assembled into the
// response the same request gives unstreamed: the stored entries (the
// message, reasoning, tool calls and their arguments) are the same blobs,
// and the usage, finish and id are the same.
func TestStreamAssemblesEveryRecordedResponse(t *testing.T) {
	for _, file := range payloadFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ctx := context.Background()
			body := readPayload(t, filepath.Base(file))
			want := decodeEntries(t, ctx, withoutCallIndex(t, body))
			assembled, err := assembleStream(bytes.NewReader(toStream(t, body)), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := decodeEntries(t, ctx, assembled)
			if got != want {
				t.Fatalf("streamed:\n%s\nunstreamed:\n%s", got, want)
			}
		})
	}
}

// A stream that breaks off before its response ends, or reports an error,
// fails; comments and event names between chunks are skipped.
func TestStreamRefusesWhatIsNotAWholeResponse(t *testing.T) {
	chunk := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}` + "\n\n"
	if _, err := assembleStream(strings.NewReader(chunk), nil); !errors.Is(err, httpx.ErrStreamIncomplete) {
		t.Fatalf("a cut stream: %v", err)
	}
	bad := chunk + `data: {"error":{"message":"overloaded"}}` + "\n\n"
	var se *httpx.StreamError
	if _, err := assembleStream(strings.NewReader(bad), nil); !errors.As(err, &se) || se.Body.Message != "overloaded" {
		t.Fatalf("an error chunk: %v", err)
	}
	ok := ": keep-alive\n\nevent: message\n" + chunk + `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}` + "\n\n"
	out, err := assembleStream(strings.NewReader(ok), nil)
	if err != nil || !bytes.Contains(out, []byte(`"message":{"role":"assistant","content":"Hello"}`)) {
		t.Fatalf("assembled %s, %v", out, err)
	}
}

// decodeEntries describes what Decode stores of a body: each entry's
// digest, kind and call, and the response's facts.
func decodeEntries(t *testing.T, ctx context.Context, body []byte) string {
	t.Helper()
	out, err := Decode(ctx, blob.NewMemory(), body)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range out.Entries {
		fmt.Fprintf(&b, "%s %s %s %s\n", e.Kind, e.Content.ProviderKind, e.Content.Digest, e.CallID)
	}
	for _, c := range out.ToolCalls {
		fmt.Fprintf(&b, "call %s %s %s\n", c.CallID, c.Name, c.Arguments.Digest)
	}
	fmt.Fprintf(&b, "finish %s id %s usage %+v failure %v\n", out.Finish, out.ResponseID, out.Usage, out.Failure)
	return b.String()
}

// An endpoint with stream set asks for a stream with its usage, and the
// streamed answer is stored as the unstreamed one is; a stream cut off
// mid-answer is a retryable provider error.
func TestAdapterStreams(t *testing.T) {
	body := readPayload(t, "api-reference-function-call.json")
	plain := &fakeChat{t: t, replies: []reply{{status: 200, body: body}}}
	_, ep := plain.start(t)
	streamed := &fakeChat{t: t, replies: []reply{
		{status: 200, headers: map[string]string{"Content-Type": "text/event-stream"}, body: toStream(t, body)},
		{status: 200, headers: map[string]string{"Content-Type": "text/event-stream"}, body: toStream(t, body)[:200]},
	}}
	_, sep := streamed.start(t)
	sep.Stream = true
	ctx := context.Background()
	b := newCtx(t)
	b.user("q")
	want, err := adapterFor(ep).Generate(ctx, b.blobs, chatRequest(b))
	if err != nil {
		t.Fatal(err)
	}
	var deltas []provider.Delta
	sreq := chatRequest(b)
	sreq.OnDelta = func(d provider.Delta) { deltas = append(deltas, d) }
	got, err := adapterFor(sep).Generate(ctx, b.blobs, sreq)
	if err != nil {
		t.Fatal(err)
	}
	var args strings.Builder
	for _, d := range deltas {
		if d.Kind == provider.DeltaToolArguments {
			args.WriteString(d.Text)
		}
	}
	if len(got.ToolCalls) == 0 {
		t.Fatal("no tool call")
	}
	stored, err := b.blobs.Get(ctx, got.ToolCalls[0].Arguments.Digest)
	if err != nil || len(deltas) < 2 || args.String() != string(stored) {
		t.Fatalf("deltas %+v do not add up to the call's arguments", deltas)
	}
	if fmt.Sprint(got.Entries, got.ToolCalls, got.Usage, got.Finish) != fmt.Sprint(want.Entries, want.ToolCalls, want.Usage, want.Finish) {
		t.Fatalf("streamed output %+v\nunstreamed %+v", got, want)
	}
	if !bytes.HasSuffix(streamed.bodies[0], []byte(`,"stream":true,"stream_options":{"include_usage":true}}`)) || bytes.Contains(plain.bodies[0], []byte(`"stream"`)) {
		t.Fatalf("requests: streamed %s\nplain %s", streamed.bodies[0], plain.bodies[0])
	}
	_, err = adapterFor(sep).Generate(ctx, b.blobs, chatRequest(b))
	var pe *provider.Error
	if !errors.As(err, &pe) || !pe.Retryable {
		t.Fatalf("a cut stream: %v", err)
	}
}

// "stream": false in the session's parameters asks a streaming endpoint
// for the whole answer; anything but a boolean is refused.
func TestParamsTurnStreamingOff(t *testing.T) {
	body := readPayload(t, "api-reference-function-call.json")
	f := &fakeChat{t: t, replies: []reply{{status: 200, body: body}}}
	_, ep := f.start(t)
	ep.Stream = true
	b := newCtx(t)
	b.user("q")
	req := chatRequest(b)
	req.Params = []byte(`{"version":1,"stream":false}`)
	if _, err := adapterFor(ep).Generate(context.Background(), b.blobs, req); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(f.bodies[0], []byte(`"stream"`)) {
		t.Fatalf("request %s", f.bodies[0])
	}
	for _, bad := range []string{`{"stream":false}`, `{"version":1,"stream":"no"}`, `{"version":1,"temperature":1}`, `[]`} {
		var pe *ParamsError
		if err := ValidateParams([]byte(bad)); !errors.As(err, &pe) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
