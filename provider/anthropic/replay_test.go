package anthropic

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/replay"
)

// TestReplayCassette drives the live code path (lowering, transport,
// error classification, pause continuation, decoding) from a cassette.
func TestReplayCassette(t *testing.T) {
	c, err := replay.Load(filepath.Join("testdata", "cassette-tool-loop.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr := replay.New(c)
	tr.RecordRequests = true
	a := New(endpoint.Static{"anthropic": {BaseURL: "https://replay.cairn.invalid", APIKey: testKey}}, &http.Client{Transport: tr})

	b := newCtx(t)
	b.instructions("instructions.main", "You are the game-night assistant.")
	b.user("Do I need a coat for the Tigers game tonight?")

	// Interaction 0: overloaded. The host would wait and retry.
	_, err = a.Generate(context.Background(), b.blobs, b.request())
	var pe *provider.Error
	if !errors.As(err, &pe) || !pe.Retryable || pe.Status != 529 || pe.RetryAfter != time.Second {
		t.Fatalf("want a retryable 529, got %v", err)
	}

	// Interaction 1: a thinking tool-use turn.
	out, err := a.Generate(context.Background(), b.blobs, b.request())
	if err != nil {
		t.Fatal(err)
	}
	if out.Finish != "tool_use" || len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != "weather" || out.Usage.CacheWriteTokens != 380 {
		t.Fatalf("turn 1: %+v", out)
	}
	if args := string(b.get(out.ToolCalls[0].Arguments)); args != `{"location":"Detroit, MI"}` {
		t.Fatalf("arguments %s", args)
	}
	b.admit(out)
	b.toolResult(out.ToolCalls[0].CallID, "weather", "41F, clear")

	// Interactions 2 and 3: a paused server search, continued.
	out, err = a.Generate(context.Background(), b.blobs, b.request())
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range out.Entries {
		kinds = append(kinds, e.Kind)
	}
	if got := strings.Join(kinds, ","); got != "reasoning,provider_opaque,provider_opaque,message" {
		t.Fatalf("entries %s", got)
	}
	if out.Finish != "end_turn" || out.ResponseID != "msg_cassette_03" || out.Usage.CachedInputTokens != 820 || out.Failure != nil {
		t.Fatalf("turn 2: %+v", out)
	}
	text, _ := ProjectText(b.get(out.Entries[3].Content))
	if text != "Bring a coat: it will be 41F, and first pitch is at 7:10 pm." {
		t.Fatalf("text %q", text)
	}
	if tr.Remaining() != 0 {
		t.Fatalf("%d interactions left", tr.Remaining())
	}

	reqs := tr.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	// The retry sent the same bytes; the continuation ends with the paused content.
	if string(reqs[0]) != string(reqs[1]) {
		t.Fatal("a retried request changed")
	}
	last := parseReq(t, reqs[3])
	tail := last.Messages[len(last.Messages)-1]
	if tail.Role != core.RoleAssistant || len(tail.Content) != 2 || blockType(t, tail.Content[0]) != typeThinking || blockType(t, tail.Content[1]) != "server_tool_use" {
		t.Fatalf("continuation tail: %s", reqs[3])
	}
}
