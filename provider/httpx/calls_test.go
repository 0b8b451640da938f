package httpx_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/anthropic"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/httpx"
	"github.com/cairn-agents/cairn/provider/responses"
	"github.com/cairn-agents/cairn/provider/transcribe"
)

// providerCall is one kind of provider I/O; each goes through httpx.Post.
type providerCall struct {
	name string
	path string // the API path it appends to the base URL
	do   func(ctx context.Context, r endpoint.Resolver, client *http.Client) error
}

// providerCalls covers every provider call Cairn makes: generation and
// compaction per API kind, and transcription.
func providerCalls(t *testing.T) []providerCall {
	blobs := blob.NewMemory()
	ctx := context.Background()
	ref, err := blob.PutRef(ctx, blobs, []byte("hello"), content.MediaText, "")
	if err != nil {
		t.Fatal(err)
	}
	entries := []core.Entry{{ID: "e1", Kind: core.EntryMessage, Role: core.RoleUser, Source: core.SourceUser, Content: ref}}
	model := func(kind string) core.ModelSelection {
		return core.ModelSelection{ProviderID: "p", APIKind: kind, Model: "m"}
	}
	return []providerCall{
		{"chat generate", "/chat/completions", func(ctx context.Context, r endpoint.Resolver, c *http.Client) error {
			_, err := chat.New(r, c).Generate(ctx, blobs, provider.Request{SessionID: "s", Model: model(core.APIChatCompletions), Entries: entries})
			return err
		}},
		{"chat compact", "/chat/completions", func(ctx context.Context, r endpoint.Resolver, c *http.Client) error {
			_, err := chat.New(r, c).Compact(ctx, blobs, provider.CompactRequest{SessionID: "s", Model: model(core.APIChatCompletions), Entries: entries})
			return err
		}},
		{"responses generate", "/responses", func(ctx context.Context, r endpoint.Resolver, c *http.Client) error {
			_, err := responses.New(r, c).Generate(ctx, blobs, provider.Request{SessionID: "s", Model: model(core.APIOpenAIResponses), Entries: entries})
			return err
		}},
		{"responses compact", "/responses/compact", func(ctx context.Context, r endpoint.Resolver, c *http.Client) error {
			_, err := responses.New(r, c).Compact(ctx, blobs, provider.CompactRequest{SessionID: "s", Model: model(core.APIOpenAIResponses), Entries: entries})
			return err
		}},
		{"anthropic generate", "/v1/messages", func(ctx context.Context, r endpoint.Resolver, c *http.Client) error {
			_, err := anthropic.New(r, c).Generate(ctx, blobs, provider.Request{SessionID: "s", Model: model(core.APIAnthropicMessages), Entries: entries})
			return err
		}},
		{"anthropic compact", "/v1/messages", func(ctx context.Context, r endpoint.Resolver, c *http.Client) error {
			_, err := anthropic.New(r, c).Compact(ctx, blobs, provider.CompactRequest{SessionID: "s", Model: model(core.APIAnthropicMessages), Entries: entries})
			return err
		}},
		{"transcription", transcribe.Path, func(ctx context.Context, r endpoint.Resolver, c *http.Client) error {
			_, err := transcribe.New(r, c).Transcribe(ctx, transcribe.Request{ProviderID: "p", Model: "whisper-1", Audio: []byte("RIFF"), Filename: "a.wav", MediaType: "audio/wav"})
			return err
		}},
	}
}

const testKey = "sk-proj-Abc123Def456Ghi789"

func resolver(base string) endpoint.Static {
	return endpoint.Static{"p": {BaseURL: base, APIKey: testKey}}
}

// A provider answering with a redirect fails the call: the conversation and
// key are never re-sent to the redirect's target, and the error names the
// status without quoting the body or Location.
func TestProviderCallsDoNotFollowRedirects(t *testing.T) {
	var elsewhere atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Write([]byte(`{}`))
	}))
	defer target.Close()
	for _, status := range []int{301, 302, 303, 307, 308} {
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Location", target.URL+"/steal?token=location-secret")
			w.WriteHeader(status)
			w.Write([]byte("moved: body-secret " + testKey))
		}))
		for _, call := range providerCalls(t) {
			err := call.do(context.Background(), resolver(redirector.URL+"/v1"), &http.Client{})
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("%s, %d: want *provider.Error, got %v", call.name, status, err)
			}
			msg := err.Error()
			if pe.Status != status || pe.Retryable || !strings.Contains(msg, "redirect") || !strings.Contains(msg, "not follow") {
				t.Errorf("%s, %d: %+v", call.name, status, pe)
			}
			for _, leak := range []string{"location-secret", "body-secret", target.URL, testKey} {
				if strings.Contains(msg, leak) {
					t.Errorf("%s, %d: error quotes %q: %s", call.name, status, leak, msg)
				}
			}
		}
		redirector.Close()
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect target received %d requests", n)
	}
}

// A base URL with a query string (Azure OpenAI's api-version) keeps it after
// the API path on every call.
func TestProviderCallsKeepTheBaseURLQueryAfterThePath(t *testing.T) {
	type seen struct{ path, query string }
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got <- seen{r.URL.EscapedPath(), r.URL.RawQuery}
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer srv.Close()
	for _, base := range []string{"/openai/deployments/d?api-version=2024-10-21", "/openai/deployments/d/?api-version=2024-10-21"} {
		for _, call := range providerCalls(t) {
			_ = call.do(context.Background(), resolver(srv.URL+base), &http.Client{})
			select {
			case s := <-got:
				if want := "/openai/deployments/d" + call.path; s.path != want || s.query != "api-version=2024-10-21" {
					t.Errorf("%s with base %s: got path %q query %q, want %q and api-version=2024-10-21", call.name, base, s.path, s.query, want)
				}
			default:
				t.Errorf("%s with base %s: no request arrived", call.name, base)
			}
		}
	}
}

// leaks reports whether text gives the key away: a start of it at least
// endpoint.MinKeyPrefix long, in any letter case.
func leaks(text string) bool {
	return strings.Contains(strings.ToLower(text), strings.ToLower(testKey[:endpoint.MinKeyPrefix]))
}

// echoes are the forms in which providers echo a key back.
var echoes = map[string]string{
	"exact":                         testKey,
	"lower-cased":                   strings.ToLower(testKey),
	"first 12":                      testKey[:12],
	"first 15, upper-cased, masked": strings.ToUpper(testKey[:15]) + "********",
}

// A provider that echoes the key in an error never gets it into the error,
// whatever the call and whatever form the echo takes.
func TestProviderErrorsNeverQuoteTheKey(t *testing.T) {
	for form, echo := range echoes {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"Incorrect API key provided: ` + echo + `.","type":"invalid_request_error","code":"invalid_api_key"}}`))
		}))
		for _, call := range providerCalls(t) {
			err := call.do(context.Background(), resolver(srv.URL), &http.Client{})
			if err == nil || leaks(err.Error()) || !strings.Contains(err.Error(), "[redacted]") {
				t.Errorf("%s, %s: %v", call.name, form, err)
			}
		}
		srv.Close()
	}
}

// A 2xx answer that echoes the key (in a refusal, a failed response's error,
// a refusal's explanation, a transcript) never gets it into a failure, an
// entry's preview or a stored blob.
func TestEchoedKeyNeverReachesFailuresOrBlobs(t *testing.T) {
	bodies := map[string]func(echo string) string{
		core.APIChatCompletions: func(echo string) string {
			return `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"your key is ` + echo + `","refusal":"not with ` + echo + `"},"finish_reason":"stop"}]}`
		},
		core.APIOpenAIResponses: func(echo string) string {
			return `{"id":"r1","status":"failed","error":{"code":"server_error","message":"bad key ` + echo + `"},"output":[{"type":"message","id":"m1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"key ` + echo + `","annotations":[]}]}]}`
		},
		core.APIAnthropicMessages: func(echo string) string {
			return `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"key ` + echo + `"}],"stop_reason":"refusal","stop_details":{"type":"refusal","category":"cyber","explanation":"blocked ` + echo + `"},"usage":{"input_tokens":1,"output_tokens":1}}`
		},
	}
	adapters := map[string]func(endpoint.Resolver) provider.Adapter{
		core.APIChatCompletions:   func(r endpoint.Resolver) provider.Adapter { return chat.New(r, nil) },
		core.APIOpenAIResponses:   func(r endpoint.Resolver) provider.Adapter { return responses.New(r, nil) },
		core.APIAnthropicMessages: func(r endpoint.Resolver) provider.Adapter { return anthropic.New(r, nil) },
	}
	for form, echo := range echoes {
		for kind, body := range bodies {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(body(echo)))
			}))
			blobs := blob.NewMemory()
			ref, err := blob.PutRef(context.Background(), blobs, []byte("hello"), content.MediaText, "")
			if err != nil {
				t.Fatal(err)
			}
			out, err := adapters[kind](resolver(srv.URL)).Generate(context.Background(), blobs, provider.Request{
				SessionID: "s", Model: core.ModelSelection{ProviderID: "p", APIKind: kind, Model: "m"},
				Entries: []core.Entry{{ID: "e1", Kind: core.EntryMessage, Role: core.RoleUser, Source: core.SourceUser, Content: ref}},
			})
			srv.Close()
			if err != nil {
				t.Fatalf("%s, %s: %v", kind, form, err)
			}
			if out.Failure != nil && leaks(out.Failure.Message) {
				t.Errorf("%s, %s: failure %q", kind, form, out.Failure.Message)
			}
			for _, e := range out.Entries {
				if leaks(e.Preview) {
					t.Errorf("%s, %s: preview %q", kind, form, e.Preview)
				}
			}
			for _, m := range blobs.Entries() {
				data, _ := blobs.Get(context.Background(), m.Digest)
				if leaks(string(data)) {
					t.Errorf("%s, %s: stored blob %s", kind, form, data)
				}
			}
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Write([]byte(`{"text":"the key is ` + echo + `"}`))
		}))
		text, err := transcribe.New(resolver(srv.URL), nil).Transcribe(context.Background(), transcribe.Request{ProviderID: "p", Model: "whisper-1", Audio: []byte("RIFF"), Filename: "a.wav"})
		srv.Close()
		if err != nil || leaks(text) {
			t.Errorf("transcription, %s: %q, %v", form, text, err)
		}
	}
}

// A body in parts arrives as the parts joined, with its length declared
// (not chunked), every time the same parts are sent: sending leaves the
// caller's parts as they were. An empty part is skipped.
func TestABodyInPartsArrivesWhole(t *testing.T) {
	var got []string
	var lengths []int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, lengths = append(got, string(b)), append(lengths, r.ContentLength)
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	parts := net.Buffers{[]byte(`{"a":[`), []byte(strings.Repeat("x", 100_000)), []byte{}, []byte(`,`), []byte(`1]}`)}
	want := string(bytes.Join(parts, nil))
	ep := endpoint.Endpoint{BaseURL: srv.URL + "/v1"}
	for range 2 {
		if _, err := httpx.Post(context.Background(), httpx.Call{Client: &http.Client{}, Endpoint: ep, Path: "/x", Parts: parts}); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || got[0] != want || got[1] != want || lengths[0] != int64(len(want)) {
		t.Fatalf("the server got %d bodies (declared lengths %v); want 2 of %d bytes, joined in order", len(got), lengths, len(want))
	}
	if len(parts) != 5 || len(parts[1]) != 100_000 || string(parts[4]) != `1]}` {
		t.Fatal("sending consumed the caller's parts")
	}
}
