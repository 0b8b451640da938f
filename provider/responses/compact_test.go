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

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// triggered is a provider_triggered policy with the given threshold.
func triggered(threshold int64) *core.Compaction {
	return &core.Compaction{Mode: core.CompactionProviderTriggered, ThresholdTokens: threshold, TargetTokens: 999}
}

func TestContextManagementOnlyWhenProviderTriggered(t *testing.T) {
	b := goldenContext(t)
	plain := lower(t, b, request(b), LowerOptions{})
	if bytes.Contains(plain, []byte("context_management")) {
		t.Fatalf("no policy, yet context_management: %s", plain)
	}
	for _, c := range []*core.Compaction{
		{Mode: core.CompactionDisabled, ThresholdTokens: 1000},
		{Mode: core.CompactionProviderStandalone, ThresholdTokens: 1000, TargetTokens: 500},
	} {
		req := request(b)
		req.Compaction = c
		if got := lower(t, b, req, LowerOptions{}); !bytes.Equal(got, plain) {
			t.Fatalf("mode %s changed the request:\n got %s\nwant %s", c.Mode, got, plain)
		}
	}

	// provider_triggered: the same body plus one member, at a fixed place
	// (after the typed parameters; here, with none, the last member).
	req := request(b)
	req.Compaction = triggered(200000)
	got := lower(t, b, req, LowerOptions{})
	want := append(bytes.TrimSuffix(plain[:len(plain):len(plain)], []byte("}")), []byte(`,"context_management":[{"type":"compaction","compact_threshold":200000}]}`)...)
	if !bytes.Equal(got, want) {
		t.Fatalf("provider_triggered:\n got %s\nwant %s", got, want)
	}
	if bytes.Contains(got, []byte("999")) {
		t.Fatal("targetTokens was sent")
	}

	// No threshold: the API's own default (compact_threshold is optional).
	req.Compaction = triggered(0)
	if m := rawMember(t, lower(t, b, req, LowerOptions{}), "context_management"); string(m) != `[{"type":"compaction"}]` {
		t.Fatalf("no threshold: %s", m)
	}

	// A compaction call never asks for compaction.
	req.Compaction = triggered(200000)
	if body := lower(t, b, req, LowerOptions{Compaction: true}); bytes.Contains(body, []byte("context_management")) {
		t.Fatalf("compaction request asks for compaction: %s", body)
	}
}

func TestContextManagementAndParams(t *testing.T) {
	b := newCtx(t)
	b.user("hi")
	req := request(b)
	req.Tools = nil
	req.Params = json.RawMessage(`{"version":1,"parallelToolCalls":true,"extra":{"truncation":"auto","context_management":[{"type":"compaction","compact_threshold":5}]}}`)

	// Without a provider_triggered policy extra's member is sent as before.
	body := lower(t, b, req, LowerOptions{})
	if !bytes.HasSuffix(body, []byte(`,"parallel_tool_calls":true,"truncation":"auto","context_management":[{"type":"compaction","compact_threshold":5}]}`)) {
		t.Fatalf("extra: %s", body)
	}
	// With one, the policy's member comes after the typed parameters and
	// before extra, and extra's is left out: one member, the policy's.
	req.Compaction = triggered(64000)
	body = lower(t, b, req, LowerOptions{})
	if !bytes.HasSuffix(body, []byte(`,"parallel_tool_calls":true,"context_management":[{"type":"compaction","compact_threshold":64000}],"truncation":"auto"}`)) ||
		bytes.Count(body, []byte("context_management")) != 1 {
		t.Fatalf("policy: %s", body)
	}
}

// compactionItem is a compaction output item as a server might write it:
// whitespace, an unknown member and member order all its own.
const compactionItem = `{ "id": "cmp_68c4a1", "type": "compaction",
	"encrypted_content": "gAAAAABo-opaque+/=", "created_by": "server", "x_future": {"b": 1.50, "a": "\u00e9"} }`

func generationWithCompaction(id, text string) []byte {
	return []byte(`{"id":"` + id + `","object":"response","status":"completed","output":[` + compactionItem + `,
		{"id":"msg_` + id + `","type":"message","status":"completed","role":"assistant",
		 "content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"` + text + `"}]}],
		"usage":{"input_tokens":90000,"input_tokens_details":{"cached_tokens":1024},"output_tokens":40,
		 "output_tokens_details":{"reasoning_tokens":0},"total_tokens":90040}}`)
}

func TestProviderTriggeredRoundTrip(t *testing.T) {
	f := &fakeResponses{wantKey: testKey}
	f.queue(reply{status: 200, body: generationWithCompaction("resp_1", "Done.")},
		reply{status: 200, body: readPayload(t, "reasoning-encrypted-summary.json")})
	a := adapterFor(f.start(t))

	b := newCtx(t)
	b.instructions("instructions.a", "Be brief.")
	b.user("Do the long task.")
	req := fakeRequest(b)
	req.Compaction = triggered(80000)
	out, err := a.Generate(context.Background(), b.blobs, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Entries) != 2 || out.Entries[1].Kind != core.EntryMessage || out.Failure != nil || out.Usage.InputTokens != 90000 {
		t.Fatalf("turn 1: %+v", out)
	}
	e := out.Entries[0]
	wantItem := compact(t, []byte(compactionItem))
	if e.Kind != core.EntryCompaction || e.Role != "" || e.Content.ProviderKind != ProviderKindItem ||
		e.Content.MediaType != "application/json" || e.TokenEstimate.Tokens <= 0 || e.TokenEstimate.Quality != core.EstimateHeuristic ||
		!strings.HasPrefix(e.Preview, "compaction") {
		t.Fatalf("compaction entry: %+v", e)
	}
	if got := b.get(e.Content); !bytes.Equal(got, wantItem) {
		t.Fatalf("stored item:\n got %s\nwant %s", got, wantItem)
	}

	// The core would prune what the compaction item replaces; this context
	// keeps everything, which the API accepts too.
	b.admit(out.Entries, false)
	b.user("And now?")
	req = fakeRequest(b)
	req.Compaction = triggered(80000)
	if _, err := a.Generate(context.Background(), b.blobs, req); err != nil {
		t.Fatal(err)
	}

	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	// The compaction item goes back exactly as received, where it was.
	in := parseRequest(t, reqs[1]).Input
	if len(in) != 4 || !bytes.Equal(in[1], wantItem) {
		t.Fatalf("turn 2 input: %s", in)
	}
	// context_management: the same bytes on both turns, and everything
	// after `input` is identical, so only the input grew.
	for _, body := range reqs {
		if m := rawMember(t, body, "context_management"); string(m) != `[{"type":"compaction","compact_threshold":80000}]` {
			t.Fatalf("context_management %s", m)
		}
	}
	tail := func(body []byte) []byte { return body[bytes.Index(body, []byte(`],"include"`)):] }
	if !bytes.Equal(tail(reqs[0]), tail(reqs[1])) {
		t.Fatalf("members after input differ:\n%s\n%s", tail(reqs[0]), tail(reqs[1]))
	}
	if paths := f.requestPaths(); paths[0] != "/v1/responses" || paths[1] != "/v1/responses" {
		t.Fatalf("paths %v", paths)
	}
}

func TestLowerCompactionEntryNeedsNativeItem(t *testing.T) {
	b := newCtx(t)
	b.add(core.EntryInput{Kind: core.EntryCompaction, Content: b.put([]byte("a summary"), "text/plain")}, core.SourceModel)
	_, err := Lower(context.Background(), b.blobs, request(b), LowerOptions{})
	var ue *UnsupportedEntryError
	if !errors.As(err, &ue) || ue.Kind != core.EntryCompaction {
		t.Fatalf("got %v", err)
	}
}

// compactAnswer is a compact endpoint answer: the kept user messages, then
// one compaction item.
const compactAnswer = `{"id":"resp_cmp_1","object":"response.compaction","created_at":1764967971,"output":[
	{"id":"msg_u1","type":"message","status":"completed","role":"user","content":[{"type":"input_text","text":"What's the weather in Boston?"}]},
	{"id":"msg_u2","type":"message","status":"completed","role":"user","content":[{"type":"input_text","text":"Thanks — and in Detroit?"}]},
	` + compactionItem + `],
	"usage":{"input_tokens":5120,"input_tokens_details":{"cached_tokens":2048},"output_tokens":700,
	 "output_tokens_details":{"reasoning_tokens":512},"total_tokens":5820}}`

// compactRequest is the compaction of b's context as the core would ask
// for it: every entry but the instructions.
func compactRequest(b *ctxBuilder) provider.CompactRequest {
	var entries []core.Entry
	for _, e := range b.entries {
		if e.Kind != core.EntryInstructions {
			entries = append(entries, e)
		}
	}
	return provider.CompactRequest{
		SessionID:    "sess-42",
		Model:        core.ModelSelection{ProviderID: "fake", APIKind: APIKind, Model: "gpt-5"},
		Entries:      entries,
		Tools:        testTools,
		Params:       json.RawMessage(`{"version":1,"serviceTier":"flex","extra":{"truncation":"auto"}}`),
		TargetTokens: 4321,
	}
}

func TestCompactEndpoint(t *testing.T) {
	f := &fakeResponses{wantKey: testKey}
	f.queue(reply{status: 200, body: []byte(compactAnswer)})
	a := adapterFor(f.start(t))
	b := goldenContext(t)
	req := compactRequest(b)

	out, err := a.Compact(context.Background(), b.blobs, req)
	if err != nil {
		t.Fatal(err)
	}
	if paths := f.requestPaths(); len(paths) != 1 || paths[0] != "/v1/responses/compact" {
		t.Fatalf("paths %v", paths)
	}

	// The body: model and input, nothing else. The input is what a
	// generation request over the same entries carries, byte for byte.
	body := f.requests()[0]
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatal(err)
	}
	if len(top) != 2 || top["model"] == nil || top["input"] == nil || !bytes.HasPrefix(body, []byte(`{"model":"gpt-5","input":[`)) {
		t.Fatalf("body members: %s", body)
	}
	gen := lower(t, b, provider.Request{Model: req.Model, Entries: req.Entries}, LowerOptions{})
	if !bytes.Equal(rawMember(t, body, "input"), rawMember(t, gen, "input")) {
		t.Fatalf("input differs from a generation's:\n%s\n%s", rawMember(t, body, "input"), rawMember(t, gen, "input"))
	}
	for _, never := range []string{"4321", "target", "tools", "prompt_cache_key", "flex", "truncation", "store", "context_management"} {
		if bytes.Contains(bytes.Replace(body, rawMember(t, body, "input"), nil, 1), []byte(never)) {
			t.Fatalf("body carries %s: %s", never, body)
		}
	}

	// The replacement: every output item, in order, stored as received.
	if out.Failure != nil || len(out.Entries) != 3 {
		t.Fatalf("out %+v", out)
	}
	items := originalItems(t, []byte(compactAnswer))
	want := []struct{ kind, role, preview string }{
		{core.EntryMessage, core.RoleUser, "What's the weather in Boston?"},
		{core.EntryMessage, core.RoleUser, "Thanks — and in Detroit?"},
		{core.EntryCompaction, "", ""},
	}
	for i, w := range want {
		e := out.Entries[i]
		if e.Kind != w.kind || e.Role != w.role || (w.preview != "" && e.Preview != w.preview) || e.Content.ProviderKind != ProviderKindItem {
			t.Errorf("entry %d: %+v", i, e)
		}
		if got := b.get(e.Content); !bytes.Equal(got, compact(t, items[i])) {
			t.Errorf("entry %d bytes:\n got %s\nwant %s", i, got, compact(t, items[i]))
		}
	}
	if u := out.Usage; u != (core.Usage{InputTokens: 5120, CachedInputTokens: 2048, OutputTokens: 700, ReasoningTokens: 512}) {
		t.Fatalf("usage %+v", u)
	}

	// The replacement lowers back: the items as received.
	c := newCtx(t)
	c.blobs = b.blobs
	c.admit(out.Entries, false)
	c.user("next")
	in := parseRequest(t, lower(t, c, request(c), LowerOptions{})).Input
	if len(in) != 4 || !bytes.Equal(in[2], compact(t, []byte(compactionItem))) || inputViolation(in) != "" {
		t.Fatalf("lowered replacement: %s", in)
	}
}

func TestCompactWithoutCompactionItemFails(t *testing.T) {
	cases := map[string]string{
		"no compaction item": `{"id":"r","object":"response.compaction","output":[
			{"type":"message","role":"user","content":[{"type":"input_text","text":"kept"}]}],
			"usage":{"input_tokens":10,"output_tokens":3}}`,
		"empty output": `{"id":"r","object":"response.compaction","output":[],"usage":{"input_tokens":10,"output_tokens":3}}`,
		"unanswered call": `{"id":"r","object":"response.compaction","output":[` + compactionItem + `,
			{"type":"function_call","call_id":"call_1","name":"search","arguments":"{}"}],"usage":{"input_tokens":10,"output_tokens":3}}`,
	}
	for name, answer := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeResponses{}
			f.queue(reply{status: 200, body: []byte(answer)})
			b := goldenContext(t)
			out, err := adapterFor(f.start(t)).Compact(context.Background(), b.blobs, compactRequest(b))
			if err != nil {
				t.Fatalf("want a failure, not an error: %v", err)
			}
			if out.Failure == nil || out.Failure.Kind != provider.FailureCompaction || out.Failure.Message == "" || len(out.Entries) != 0 {
				t.Fatalf("out %+v", out)
			}
			if out.Usage.InputTokens != 10 || out.Usage.OutputTokens != 3 {
				t.Fatalf("usage lost: %+v", out.Usage)
			}
		})
	}
}

func TestCompactErrors(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name       string
		rep        reply
		retryable  bool
		retryAfter time.Duration
		msg        string
	}{
		{"429", reply{429, map[string]string{"Retry-After": "3"}, []byte(`{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}`)}, true, 3 * time.Second, "Rate limit reached"},
		{"429 quota", reply{429, nil, []byte(`{"error":{"message":"You exceeded your current quota","code":"insufficient_quota"}}`)}, false, 0, "You exceeded your current quota"},
		{"400", reply{400, nil, []byte(`{"error":{"message":"Unknown parameter: 'tools'.","param":"tools"}}`)}, false, 0, "Unknown parameter: 'tools'."},
		{"500", reply{500, nil, []byte(`{"error":{"message":"server error"}}`)}, true, 0, "server error"},
		{"200 not a compaction", reply{200, nil, []byte(`{"error":{"message":"upstream failed"}}`)}, false, 0, "responses: decode response: response has no output array"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeResponses{wantKey: testKey}
			f.queue(c.rep)
			a := adapterFor(f.start(t))
			a.now = func() time.Time { return now }
			b := goldenContext(t)
			_, err := a.Compact(context.Background(), b.blobs, compactRequest(b))
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("want *provider.Error, got %v", err)
			}
			if pe.Status != c.rep.status || pe.Retryable != c.retryable || pe.RetryAfter != c.retryAfter || pe.Message != c.msg {
				t.Fatalf("got %+v", pe)
			}
			if f.requestPaths()[0] != "/v1/responses/compact" {
				t.Fatalf("path %v", f.requestPaths())
			}
		})
	}

	t.Run("wrong key", func(t *testing.T) {
		f := &fakeResponses{wantKey: "another-key-123456"}
		ep := f.start(t)
		ep.APIKey = testKey
		b := goldenContext(t)
		_, err := adapterFor(ep).Compact(context.Background(), b.blobs, compactRequest(b))
		// The fake answers 401 quoting the key it was sent, as OpenAI does.
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Status != http.StatusUnauthorized || pe.Retryable {
			t.Fatalf("got %v", err)
		}
		if strings.Contains(err.Error(), testKey) {
			t.Fatalf("error echoes the key: %v", err)
		}
	})
}

func TestCompactFailsBeforeIO(t *testing.T) {
	f := &fakeResponses{}
	f.queue(reply{status: 200, body: []byte(compactAnswer)})
	a := adapterFor(f.start(t))
	b := goldenContext(t)

	req := compactRequest(b)
	req.Model.APIKind = core.APIChatCompletions
	if _, err := a.Compact(context.Background(), b.blobs, req); err == nil || !strings.Contains(err.Error(), "API kind") {
		t.Fatalf("wrong API kind: %v", err)
	}
	req = compactRequest(b)
	req.Entries = nil
	if _, err := a.Compact(context.Background(), b.blobs, req); err == nil || !strings.Contains(err.Error(), "no entries") {
		t.Fatalf("nothing to compact: %v", err)
	}
	req = compactRequest(b)
	req.Model.Model = ""
	if _, err := a.Compact(context.Background(), b.blobs, req); err == nil {
		t.Fatal("no model: no error")
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d requests were sent", n)
	}
}

func TestLowerCompactLayout(t *testing.T) {
	// The core never sends instruction entries to a compaction; if some are
	// there anyway they go where a generation puts them, not into input.
	b := goldenContext(t)
	req := compactRequest(b)
	req.Entries = b.entries
	body, err := LowerCompact(context.Background(), b.blobs, req)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := LowerCompact(context.Background(), b.blobs, req)
	if !bytes.Equal(body, again) {
		t.Fatal("LowerCompact is not deterministic")
	}
	gen := lower(t, b, request(b), LowerOptions{})
	if !bytes.HasPrefix(body, []byte(`{"model":"gpt-5","instructions":`+string(rawMember(t, gen, "instructions"))+`,"input":[`)) ||
		!bytes.HasSuffix(body, []byte(`]}`)) {
		t.Fatalf("layout: %s", body)
	}
	if r := parseRequest(t, body); r.Instructions == nil || !strings.HasPrefix(*r.Instructions, "You are the weather desk.") {
		t.Fatalf("instructions: %s", body)
	}
	if !bytes.Equal(rawMember(t, body, "input"), rawMember(t, gen, "input")) {
		t.Fatal("input differs from a generation's")
	}
}
