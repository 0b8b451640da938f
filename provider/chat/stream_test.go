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
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// toStream plays a recorded response as the provider streams it: chunks of
// the message's members in their order (text in two pieces, each tool call
// first with its id, type and name and then its arguments in two pieces),
// the finish reason, usage on a last chunk without choices, and [DONE].
func toStream(t *testing.T, body []byte) []byte {
	t.Helper()
	top, err := rawjson.ObjectMembers(body)
	if err != nil {
		t.Fatal(err)
	}
	choices, _ := rawjson.ArrayElements(rawjson.Lookup(top, "choices"))
	choice, _ := rawjson.ObjectMembers(choices[0])
	msg, _ := rawjson.ObjectMembers(rawjson.Lookup(choice, "message"))
	var head []rawjson.Member
	for _, m := range top {
		switch m.Name {
		case "choices", "usage":
		case "object":
			head = append(head, rawjson.Member{Name: m.Name, RawName: m.RawName, Value: []byte(`"chat.completion.chunk"`)})
		default:
			head = append(head, m)
		}
	}
	var out bytes.Buffer
	chunk := func(choices string, extra ...rawjson.Member) {
		ms := append(append([]rawjson.Member{}, head...), rawjson.Member{Name: "choices", RawName: []byte(`"choices"`), Value: []byte(choices)})
		ms = append(ms, extra...)
		var b bytes.Buffer
		rawjson.WriteObject(&b, ms)
		fmt.Fprintf(&out, "data: %s\n\n", b.Bytes())
	}
	delta := func(d string) { chunk(`[{"index":0,"delta":` + d + `,"logprobs":null,"finish_reason":null}]`) }
	str := func(s string) string { var b bytes.Buffer; rawjson.WriteString(&b, s); return b.String() }
	for _, m := range msg {
		name := string(m.RawName)
		switch {
		case streamedTextMembers[m.Name]:
			s, ok := rawjson.String(m.Value)
			if !ok || len(s) < 2 {
				delta("{" + name + ":" + string(m.Value) + "}")
				continue
			}
			half := len(s) / 2
			for !utf8Start(s, half) {
				half++
			}
			delta("{" + name + ":" + str(s[:half]) + "}")
			delta("{" + name + ":" + str(s[half:]) + "}")
		case m.Name == "tool_calls" && !rawjson.IsNull(m.Value):
			calls, _ := rawjson.ArrayElements(m.Value)
			for i, c := range calls {
				cm, _ := rawjson.ObjectMembers(c)
				var first []rawjson.Member
				args := ""
				first = append(first, rawjson.Member{Name: "index", RawName: []byte(`"index"`), Value: []byte(fmt.Sprint(i))})
				for _, f := range cm {
					switch f.Name {
					case "index":
					case "function":
						fn, _ := rawjson.ObjectMembers(f.Value)
						var kept []rawjson.Member
						for _, g := range fn {
							if g.Name == "arguments" {
								args, _ = rawjson.String(g.Value)
								g.Value = []byte(`""`)
							}
							kept = append(kept, g)
						}
						var b bytes.Buffer
						rawjson.WriteObject(&b, kept)
						first = append(first, rawjson.Member{Name: f.Name, RawName: f.RawName, Value: b.Bytes()})
					default:
						first = append(first, f)
					}
				}
				var b bytes.Buffer
				rawjson.WriteObject(&b, first)
				delta(`{"tool_calls":[` + b.String() + `]}`)
				half := len(args) / 2
				for _, piece := range []string{args[:half], args[half:]} {
					delta(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, i, str(piece)))
				}
			}
		default:
			delta("{" + name + ":" + string(m.Value) + "}")
		}
	}
	chunk(`[{"index":0,"delta":{},"logprobs":null,"finish_reason":` + string(rawjson.Lookup(choice, "finish_reason")) + `}]`)
	if u := rawjson.Lookup(top, "usage"); u != nil {
		chunk(`[]`, rawjson.Member{Name: "usage", RawName: []byte(`"usage"`), Value: u})
	}
	out.WriteString("data: [DONE]\n\n")
	return out.Bytes()
}

func utf8Start(s string, i int) bool { return i >= len(s) || s[i]&0xC0 != 0x80 }

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
	if _, err := assembleStream(strings.NewReader(chunk), nil); !errors.Is(err, ErrStreamIncomplete) {
		t.Fatalf("a cut stream: %v", err)
	}
	bad := chunk + `data: {"error":{"message":"overloaded"}}` + "\n\n"
	var de *DecodeError
	if _, err := assembleStream(strings.NewReader(bad), nil); !errors.As(err, &de) {
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
