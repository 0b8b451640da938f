package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/replay"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/view"
)

// chatAnswer is a Chat Completions response with text and usage figures.
func chatAnswer(n int, text string, cached int) json.RawMessage {
	body, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1764720000 + n, "model": "gpt-4o-mini",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": text, "refusal": nil}}},
		"usage": map[string]any{"prompt_tokens": 50 + n, "completion_tokens": 3, "total_tokens": 53 + n,
			"prompt_tokens_details": map[string]any{"cached_tokens": cached}},
	})
	return body
}

// replayServer is a JSON-RPC server whose host speaks Chat Completions
// through the real adapter to a cassette of answers.
func replayServer(t *testing.T, answers ...json.RawMessage) *api.Client {
	t.Helper()
	cassette := &replay.Cassette{Format: replay.Format, Version: replay.Version}
	for _, a := range answers {
		cassette.Interactions = append(cassette.Interactions, replay.Interaction{Status: 200, Headers: map[string]string{"Content-Type": "application/json"}, Body: a})
	}
	adapter := chat.New(endpoint.Static{"openai": {BaseURL: "https://replay.cairn.invalid/v1"}}, &http.Client{Transport: replay.New(cassette)})
	blobs := blob.NewMemory()
	log := store.NewMemory(blobs)
	host := local.New(local.Options{
		Log: log, Blobs: blobs,
		Executor: &runtime.Executor{Blobs: blobs, Adapters: map[string]provider.Adapter{core.APIChatCompletions: adapter}, Tools: vfsTools(t), Files: log},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err := host.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.NewServer(host, api.ServerOptions{APIKinds: []string{core.APIChatCompletions}}).Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(host.Close)
	return api.NewClient(srv.URL, nil)
}

func TestCacheReport_OverRPC(t *testing.T) {
	c := replayServer(t, chatAnswer(0, "hello", 0), chatAnswer(1, "7 pm", 32), chatAnswer(2, "bye", 48))
	created, err := c.CreateSession(bg, api.CreateSessionParams{Model: core.ModelSelection{ProviderID: "openai", APIKind: core.APIChatCompletions, Model: "gpt-4o-mini"}, Instructions: "Be brief."})
	if err != nil {
		t.Fatal(err)
	}
	sid := created.SessionID
	run := func(text string) {
		t.Helper()
		r, err := c.StartRun(bg, api.RunStartParams{SessionID: sid, Input: textInput(text)})
		if err != nil {
			t.Fatal(err)
		}
		waitRunStatus(t, c, sid, r.RunID, core.StatusCompleted)
	}
	run("hi")
	run("when?")
	edited, err := c.AppendContext(bg, api.ContextAppendParams{SessionID: sid, Kind: core.EntryInstructions, Key: "instructions.main", Text: "Be brief and friendly."})
	if err != nil {
		t.Fatal(err)
	}
	run("thanks")
	var editSeq int64
	evs, err := c.ReadEvents(bg, api.EventsReadParams{SessionID: sid, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Events {
		if ev.Kind == core.KindContextEntriesApplied && bytes.Contains(ev.Payload, []byte(`"entryId":"`+edited.EntryID+`"`)) {
			editSeq = ev.Seq
		}
	}

	r, err := c.CacheReport(bg, api.CacheReportParams{SessionID: sid})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Turns) != 3 || r.Cursor != 0 {
		t.Fatalf("report %+v", r)
	}
	if f := r.Turns[1].PrefixFraction; f == nil || *f != 1 || r.Turns[1].BrokenBy != nil || *r.Turns[1].ProviderCachedTokens != 32 {
		t.Fatalf("second generation %+v", r.Turns[1])
	}
	want := view.BrokenBy{Seq: editSeq, Kind: core.KindContextEntriesApplied, Segment: view.BrokenSegment{Index: 0, Kind: core.SegmentInstructions, Key: "instructions.main"}}
	if b := r.Turns[2].BrokenBy; editSeq == 0 || b == nil || *b != want || r.Turns[2].PrefixBytes != 0 {
		t.Fatalf("after the instruction edit (seq %d): %+v, brokenBy %+v", editSeq, r.Turns[2], b)
	}

	// Paging: one row, with the cursor to the earlier ones.
	page, err := c.CacheReport(bg, api.CacheReportParams{SessionID: sid, Limit: 1})
	if err != nil || len(page.Turns) != 1 || page.Cursor != r.Turns[2].Seq {
		t.Fatalf("page of 1: %+v (%v)", page, err)
	}
	earlier, err := c.CacheReport(bg, api.CacheReportParams{SessionID: sid, Before: page.Cursor, Limit: 5})
	if err != nil || len(earlier.Turns) != 2 || earlier.Turns[1].Seq != r.Turns[1].Seq || earlier.Cursor != 0 {
		t.Fatalf("earlier page: %+v (%v)", earlier, err)
	}

	// The wire names are the documented ones.
	var raw struct {
		Turns []map[string]json.RawMessage `json:"turns"`
	}
	if err := c.Call(bg, api.MethodCacheReport, map[string]any{"sessionId": sid}, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"runId", "turn", "seq", "model", "requestBytes", "prefixBytes", "prefixFraction", "providerCachedTokens", "brokenBy"} {
		if _, ok := raw.Turns[2][k]; !ok {
			t.Fatalf("row lacks %q: %v", k, raw.Turns[2])
		}
	}
	if _, ok := raw.Turns[0]["prefixFraction"]; ok {
		t.Fatal("the first generation has a prefixFraction")
	}

	_, err = c.CacheReport(bg, api.CacheReportParams{SessionID: sid, Limit: 501})
	wantKind(t, err, api.KindInvalidParams)
	_, err = c.CacheReport(bg, api.CacheReportParams{})
	wantKind(t, err, api.KindInvalidParams)
	_, err = c.CacheReport(bg, api.CacheReportParams{SessionID: "nope"})
	wantKind(t, err, api.KindNotFound)
}

func waitRunStatus(t *testing.T, c *api.Client, sid, runID, status string) {
	t.Helper()
	for range 2000 {
		r, err := c.ReadRun(bg, sid, runID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == status {
			return
		}
		if r.Status != core.StatusQueued && r.Status != core.StatusRunning && r.Status != core.StatusAwaitingTools {
			t.Fatalf("run %s ended %s (%+v), want %s", runID, r.Status, r.Error, status)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("run %s never reached %s", runID, status)
}
