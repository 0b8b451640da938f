package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/payloads"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/replay"
)

const cassetteText = `{"format":"cairn.cassette","version":1,"interactions":[
  {"status":200,"headers":{"X-Request-Id":"r1"},"body":{ "id" : "one",  "n": 1.50 }},
  {"status":429,"headers":{"Retry-After":"3"},"body":{"error":{"message":"slow down"}}}
]}`

func post(t *testing.T, c *http.Client, body string) (*http.Response, []byte, error) {
	t.Helper()
	resp, err := c.Post("http://replay.invalid/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

func TestTransportReplaysInOrder(t *testing.T) {
	c, err := replay.Parse([]byte(cassetteText))
	if err != nil {
		t.Fatal(err)
	}
	tr := replay.New(c)
	tr.RecordRequests = true
	var seen []string
	tr.OnRequest = func(n int, body []byte) { seen = append(seen, fmt.Sprintf("%d:%s", n, body)) }
	client := &http.Client{Transport: tr}

	resp, data, err := post(t, client, `{"q":1}`)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") != "r1" || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("response 0: %d %v", resp.StatusCode, resp.Header)
	}
	if string(data) != `{ "id" : "one",  "n": 1.50 }` {
		t.Fatalf("body bytes not as recorded: %s", data)
	}
	if len(seen) != 1 {
		t.Fatal("hook must run before the answer is returned")
	}
	resp, data, err = post(t, client, `{"q":2}`)
	if err != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || !bytes.Contains(data, []byte("slow down")) {
		t.Fatalf("response 1: %v %v %s", resp, err, data)
	}
	if tr.Remaining() != 0 {
		t.Fatal("remaining")
	}

	_, _, err = post(t, client, `{"q":3}`)
	var ex *replay.ExhaustedError
	if !errors.As(err, &ex) || ex.Request != 2 || ex.Interactions != 2 || !strings.Contains(err.Error(), "exhausted") {
		t.Fatalf("want exhausted, got %v", err)
	}
	if strings.Join(seen, " ") != `0:{"q":1} 1:{"q":2}` {
		t.Fatalf("hook saw %v", seen)
	}
	if reqs := tr.Requests(); len(reqs) != 2 || string(reqs[0]) != `{"q":1}` || string(reqs[1]) != `{"q":2}` {
		t.Fatalf("recorded %q", reqs)
	}
}

func TestRequestsNotRecordedUnlessAsked(t *testing.T) {
	c, _ := replay.Parse([]byte(cassetteText))
	tr := replay.New(c)
	if _, _, err := post(t, &http.Client{Transport: tr}, `{}`); err != nil {
		t.Fatal(err)
	}
	if len(tr.Requests()) != 0 {
		t.Fatal("recorded without RecordRequests")
	}
}

func TestParseRejects(t *testing.T) {
	for name, text := range map[string]string{
		"format":   `{"format":"vcr","version":1,"interactions":[]}`,
		"version":  `{"format":"cairn.cassette","version":2,"interactions":[]}`,
		"status":   `{"format":"cairn.cassette","version":1,"interactions":[{"status":0,"body":{}}]}`,
		"no body":  `{"format":"cairn.cassette","version":1,"interactions":[{"status":200}]}`,
		"length":   `{"format":"cairn.cassette","version":1,"interactions":[{"status":200,"headers":{"content-length":"9"},"body":{}}]}`,
		"unknown":  `{"format":"cairn.cassette","version":1,"interactions":[],"extra":1}`,
		"not json": `{"format":`,
	} {
		if _, err := replay.Parse([]byte(text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestLoadAndMarshalRoundTrip(t *testing.T) {
	c, _ := replay.Parse([]byte(cassetteText))
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := replay.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Interactions) != 2 || back.Interactions[1].Headers["Retry-After"] != "3" {
		t.Fatalf("%+v", back)
	}
	var a, b bytes.Buffer
	if err := json.Compact(&a, c.Interactions[0].Body); err != nil {
		t.Fatal(err)
	}
	if err := json.Compact(&b, back.Interactions[0].Body); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() || !strings.Contains(a.String(), "1.50") {
		t.Fatalf("body changed: %s vs %s", a.String(), b.String())
	}
	if _, err := replay.Load(filepath.Join(t.TempDir(), "absent.json")); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestConcurrentRequestsEachGetOneInteraction(t *testing.T) {
	c := &replay.Cassette{Format: replay.Format, Version: replay.Version}
	for i := 0; i < 50; i++ {
		c.Interactions = append(c.Interactions, replay.Interaction{Status: 200, Body: []byte(fmt.Sprintf(`{"i":%d}`, i))})
	}
	tr := replay.New(c)
	tr.RecordRequests = true
	client := &http.Client{Transport: tr}
	var mu sync.Mutex
	got := map[string]bool{}
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, data, err := post(t, client, `{}`)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got[string(data)] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(got) != 50 || len(tr.Requests()) != 50 {
		t.Fatalf("%d distinct answers, %d requests", len(got), len(tr.Requests()))
	}
}

// TestChatAdapterThroughCassette drives the unchanged chat adapter through a
// cassette built from the shared recorded payloads, injecting a steering
// message from OnRequest the way the demo does.
func TestChatAdapterThroughCassette(t *testing.T) {
	dir := payloads.Dir("chat")
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	c := &replay.Cassette{Format: replay.Format, Version: replay.Version, Interactions: []replay.Interaction{
		{Status: 503, Headers: map[string]string{"Retry-After": "1"}, Body: []byte(`{"error":{"message":"overloaded"}}`)},
		{Status: 200, Body: read("deepseek-parallel-tool-calls.json")},
		{Status: 200, Body: read("cached-tokens.json")},
	}}
	raw, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if c, err = replay.Parse(raw); err != nil {
		t.Fatal(err)
	}

	store := blob.NewMemory()
	ctx := context.Background()
	var entries []core.Entry
	add := func(in core.EntryInput) {
		entries = append(entries, core.Entry{ID: fmt.Sprintf("e%d", len(entries)+1), Kind: in.Kind, Role: in.Role, Content: in.Content, CallID: in.CallID, ToolName: in.ToolName})
	}
	text := func(kind, role, s, callID string) {
		ref, err := blob.PutRef(ctx, store, []byte(s), content.MediaText, "")
		if err != nil {
			t.Fatal(err)
		}
		add(core.EntryInput{Kind: kind, Role: role, Content: ref, CallID: callID})
	}

	tr := replay.New(c)
	tr.RecordRequests = true
	steering := make(chan string, 1)
	tr.OnRequest = func(n int, body []byte) {
		if n == 1 { // while turn 1 is "in flight", the user steers
			steering <- "Also: use Celsius."
		}
	}
	a := chat.New(endpoint.Static{"deepseek": {BaseURL: "https://api.deepseek.example/v1", APIKey: "k-123456789"}}, &http.Client{Transport: tr})
	req := func() provider.Request {
		return provider.Request{SessionID: "demo", Model: core.ModelSelection{ProviderID: "deepseek", APIKind: core.APIChatCompletions, Model: "deepseek-chat"}, Entries: entries}
	}

	text(core.EntryMessage, core.RoleUser, "Tigers game time and weather?", "")
	_, err = a.Generate(ctx, store, req())
	var pe *provider.Error
	if !errors.As(err, &pe) || !pe.Retryable || pe.RetryAfter != time.Second || pe.Message != "overloaded" {
		t.Fatalf("first answer should be a retryable 503: %v", err)
	}
	out, err := a.Generate(ctx, store, req()) // the retry
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range out.Entries {
		add(in)
	}
	for _, call := range out.ToolCalls {
		text(core.EntryToolResult, "", "result of "+call.Name, call.CallID)
	}
	// Steering admitted during the call applies at the next turn boundary.
	text(core.EntryMessage, core.RoleUser, <-steering, "")
	out, err = a.Generate(ctx, store, req())
	if err != nil || out.Finish != "stop" {
		t.Fatalf("turn 2: %+v %v", out, err)
	}
	_, err = a.Generate(ctx, store, req())
	if !errors.As(err, &pe) || pe.Retryable || !strings.Contains(pe.Message, "exhausted") {
		t.Fatalf("an exhausted cassette is terminal: %v", err)
	}

	reqs := tr.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	if !bytes.Equal(reqs[0], reqs[1]) {
		t.Fatal("the retry must send the same bytes")
	}
	if !bytes.Contains(reqs[2], []byte(`{"role":"tool","tool_call_id":"call_1_b7890944-9632-458e-93c1-89ae71996523","content":"result of weather"},{"role":"user","content":"Also: use Celsius."}`)) {
		t.Fatalf("turn 2 request: %s", reqs[2])
	}
	if !bytes.HasPrefix(reqs[2], reqs[1][:bytes.LastIndexByte(reqs[1], ']')]) {
		t.Fatal("turn 2 does not extend turn 1")
	}
}
