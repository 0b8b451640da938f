package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/payloads"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/anthropic"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/replay"
	"github.com/cairn-agents/cairn/provider/responses"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/view"
)

// recordedPayload reads one of the shared recorded provider responses.
func recordedPayload(t *testing.T, kind, name string) json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(payloads.Dir(kind), name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// payloadServer is a JSON-RPC server whose host speaks apiKind through the
// real adapter to a cassette of answers; the transport keeps the requests.
func payloadServer(t *testing.T, apiKind string, answers ...json.RawMessage) (*api.Client, *replay.Transport) {
	t.Helper()
	cassette := &replay.Cassette{Format: replay.Format, Version: replay.Version}
	for _, a := range answers {
		cassette.Interactions = append(cassette.Interactions, replay.Interaction{Status: 200, Headers: map[string]string{"Content-Type": "application/json"}, Body: a})
	}
	transport := replay.New(cassette)
	transport.RecordRequests = true
	resolver := endpoint.Static{"p": {BaseURL: "https://replay.cairn.invalid/v1"}}
	client := &http.Client{Transport: transport}
	adapters := map[string]provider.Adapter{
		core.APIChatCompletions:   chat.New(resolver, client),
		core.APIOpenAIResponses:   responses.New(resolver, client),
		core.APIAnthropicMessages: anthropic.New(resolver, client),
	}
	blobs := blob.NewMemory()
	log := store.NewMemory(blobs)
	host := local.New(local.Options{
		Log: log, Blobs: blobs,
		Executor: &runtime.Executor{Blobs: blobs, Adapters: adapters, Tools: vfsTools(t), Files: log},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err := host.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.NewServer(host, api.ServerOptions{APIKinds: []string{apiKind}}).Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(host.Close)
	return api.NewClient(srv.URL, nil), transport
}

// responsesAnswer is a minimal completed Responses answer with text.
func responsesAnswer(text string) json.RawMessage {
	body, _ := json.Marshal(map[string]any{"id": "resp_next", "object": "response", "status": "completed",
		"output": []any{map[string]any{"type": "message", "id": "msg_next", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}}})
	return body
}

// A refusal-only answer (HTTP 200, status completed) completes the run: its
// output is the stored message, session/runs/read gives the refusal as text
// with refusal: true, the transcript marks it too, and the next run re-sends
// it as received.
func TestRefusal_CompletesTheRunWithTheRefusalAsOutput(t *testing.T) {
	const refusalText = "I'm sorry, I cannot assist with that request."
	cases := []struct {
		apiKind, dir string
		next         json.RawMessage
		resent       string // bytes of the stored refusal the next request carries
	}{
		{core.APIOpenAIResponses, "responses", responsesAnswer("ok"), `"id":"msg_1234567890"`},
		{core.APIChatCompletions, "chat", chatAnswer(1, "ok", 0), `{"role":"assistant","content":null,"refusal":"I'm sorry, I cannot assist with that request."}`},
	}
	for _, tc := range cases {
		t.Run(tc.apiKind, func(t *testing.T) {
			c, transport := payloadServer(t, tc.apiKind, recordedPayload(t, tc.dir, "refusal.json"), tc.next)
			created, err := c.CreateSession(bg, api.CreateSessionParams{Model: core.ModelSelection{ProviderID: "p", APIKind: tc.apiKind, Model: "gpt-4o-2024-08-06"}})
			if err != nil {
				t.Fatal(err)
			}
			sid := created.SessionID
			r, err := c.StartRun(bg, api.RunStartParams{SessionID: sid, Input: textInput("help me with something bad")})
			if err != nil {
				t.Fatal(err)
			}
			waitRunStatus(t, c, sid, r.RunID, core.StatusCompleted)
			got, err := c.ReadRun(bg, sid, r.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Error != nil || got.Output == nil || got.Output.Text == nil || *got.Output.Text != refusalText || !got.Output.Refusal {
				t.Fatalf("run read: %+v output %+v", got, got.Output)
			}
			var raw map[string]any
			if err := c.Call(bg, api.MethodRunsRead, api.RunParams{SessionID: sid, RunID: r.RunID}, &raw); err != nil {
				t.Fatal(err)
			}
			if out, _ := raw["output"].(map[string]any); out["refusal"] != true || out["text"] != refusalText {
				t.Fatalf("session/runs/read output on the wire: %v", raw["output"])
			}

			page, err := c.ReadTranscript(bg, api.TranscriptReadParams{SessionID: sid, Limit: 500})
			if err != nil {
				t.Fatal(err)
			}
			var marked int
			for _, ev := range page.Events {
				d := ev.Display
				if d == nil {
					continue
				}
				if d.Kind == view.DisplayOutput && d.Content != nil && d.Content.Refusal && *d.Content.Text == refusalText {
					marked++
				}
				for _, e := range d.Entries {
					if e.Role == core.RoleAssistant && e.Refusal && *e.Text == refusalText {
						marked++
					}
				}
			}
			if marked != 2 {
				t.Fatalf("the transcript marks %d displays as the refusal, want 2 (the message and the run output)", marked)
			}

			r2, err := c.StartRun(bg, api.RunStartParams{SessionID: sid, Input: textInput("then something else")})
			if err != nil {
				t.Fatal(err)
			}
			waitRunStatus(t, c, sid, r2.RunID, core.StatusCompleted)
			reqs := transport.Requests()
			if len(reqs) != 2 || !bytes.Contains(reqs[1], []byte(tc.resent)) {
				t.Fatalf("the next request does not re-send the refusal (%d requests):\n%s", len(reqs), reqs[len(reqs)-1])
			}
		})
	}
}

// An Anthropic refusal (stop_reason "refusal") still fails the run and is
// never re-sent, as Anthropic requires.
func TestRefusal_AnthropicStopReasonStillFailsTheRun(t *testing.T) {
	c, _ := payloadServer(t, core.APIAnthropicMessages, recordedPayload(t, "anthropic", "refusal.json"))
	created, err := c.CreateSession(bg, api.CreateSessionParams{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIAnthropicMessages, Model: "claude-fable-5"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.StartRun(bg, api.RunStartParams{SessionID: created.SessionID, Input: textInput("help me with something bad")})
	if err != nil {
		t.Fatal(err)
	}
	waitRunStatus(t, c, created.SessionID, r.RunID, core.StatusFailed)
	got, err := c.ReadRun(bg, created.SessionID, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Output != nil || got.Error == nil || got.Error.Kind != anthropic.FailureRefusal {
		t.Fatalf("run read: %+v", got)
	}
}
