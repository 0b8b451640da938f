package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/replay"
)

// chatStop is a Chat Completions response body answering text.
func chatStop(n int, text string) json.RawMessage {
	body, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1764720000 + n, "model": "gpt-4o-mini",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": text, "refusal": nil, "annotations": []any{}}}},
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105},
	})
	return body
}

// TestSpec_CatalogUpdatesKeepEveryEarlierRequestAsBytePrefix plays four runs
// through the real Chat Completions lowering; between them the skill catalog
// changes three times. Each changed catalog is appended at the tail, so every
// request's messages are an exact byte prefix of the next request's.
func TestSpec_CatalogUpdatesKeepEveryEarlierRequestAsBytePrefix(t *testing.T) {
	const runs = 4
	cassette := &replay.Cassette{Format: replay.Format, Version: replay.Version}
	for i := range runs {
		cassette.Interactions = append(cassette.Interactions, replay.Interaction{Status: 200,
			Headers: map[string]string{"Content-Type": "application/json"}, Body: chatStop(i, fmt.Sprintf("answer %d", i))})
	}
	transport := replay.New(cassette)
	transport.RecordRequests = true
	adapter := chat.New(endpoint.Static{"openai": {BaseURL: "https://replay.cairn.invalid/v1"}}, &http.Client{Transport: transport})

	// The real adapter lowers, sends and decodes; the cassette answers.
	e := newFilesEnv(t, &scriptAdapter{fn: func(ctx context.Context, _ int, blobs blob.Store, req provider.Request) (provider.Output, error) {
		return adapter.Generate(ctx, blobs, req)
	}})

	skill := func(v int) string {
		return fmt.Sprintf("---\nname: notes\ndescription: Take notes, version %d.\n---\nBody %d.\n", v, v)
	}
	e.workspace("acorn", map[string]string{
		".cairn/prompts/instructions.md": "You edit release notes.",
		".cairn/skills/notes/SKILL.md":   skill(1),
	})
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "openai", APIKind: core.APIChatCompletions, Model: "gpt-4o-mini"},
		Tools: vfsToolNames(), Links: []core.Link{{Mount: "/work", Workspace: "acorn"}}}
	if _, err := e.host.CreateSession(context.Background(), "s1", cfg, nil); err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		if i > 0 {
			e.writeFile("acorn", ".cairn/skills/notes/SKILL.md", skill(i+1))
		}
		if r := e.waitRun("s1", e.startRun("s1", fmt.Sprintf("run %d", i))); r.Status != core.StatusCompleted {
			t.Fatalf("run %d %s: %+v", i, r.Status, r.Error)
		}
	}
	reqs := transport.Requests()
	if len(reqs) != runs {
		t.Fatalf("%d requests, want %d", len(reqs), runs)
	}
	var catalogs int
	_ = e.host.Inspect(context.Background(), "s1", func(s *core.State) {
		for _, en := range s.Context() {
			if en.Key == core.SkillCatalogKey {
				catalogs++
			}
		}
	})
	if catalogs != runs {
		t.Fatalf("%d catalog versions in context, want %d (three updates superseding the first)", catalogs, runs)
	}
	for i := 1; i < len(reqs); i++ {
		prev, next := messages(t, reqs[i-1]), messages(t, reqs[i])
		if len(next) <= len(prev) {
			t.Fatalf("request %d has %d messages, request %d has %d", i, len(next), i-1, len(prev))
		}
		for j := range prev {
			if !bytes.Equal(prev[j], next[j]) {
				t.Fatalf("request %d message %d differs from request %d's:\n%s\n%s", i, j, i-1, prev[j], next[j])
			}
		}
		t.Logf("request %d: its first %d of %d messages (%d of %d bytes) are request %d's messages", i, len(prev), len(next), size(prev), size(next), i-1)
	}
}

func messages(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	return req.Messages
}

func size(msgs []json.RawMessage) int {
	n := 0
	for _, m := range msgs {
		n += len(m)
	}
	return n
}
