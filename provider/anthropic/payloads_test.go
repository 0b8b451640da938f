package anthropic

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// TestPayloads runs every recorded Messages response through decode, storage,
// projection and the next request's lowering, checking the rules of the
// shared payload README.
func TestPayloads(t *testing.T) {
	for _, path := range payloadFiles(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) { checkPayload(t, name) })
	}
}

// recorded is what a test reads from a fixture with encoding/json.
type recorded struct {
	ID         string `json:"id"`
	StopReason string `json:"stop_reason"`
	Usage      struct {
		InputTokens         int64 `json:"input_tokens"`
		OutputTokens        int64 `json:"output_tokens"`
		CacheReadTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

func checkPayload(t *testing.T, name string) {
	body := readPayload(t, name)
	orig := originalContent(t, body)
	var rec recorded
	if err := json.Unmarshal(body, &rec); err != nil {
		t.Fatal(err)
	}

	b := newCtx(t)
	b.instructions("instructions.base", "You are terse.")
	b.user("question")
	out, added := b.decode(body)
	b.user("next question")

	// Facts.
	if out.ResponseID != rec.ID || out.Finish != rec.StopReason {
		t.Fatalf("facts: id %q finish %q", out.ResponseID, out.Finish)
	}
	u := rec.Usage
	if out.Usage.OutputTokens != u.OutputTokens || out.Usage.CachedInputTokens != u.CacheReadTokens ||
		out.Usage.CacheWriteTokens != u.CacheCreationTokens || out.Usage.InputTokens != u.InputTokens+u.CacheReadTokens+u.CacheCreationTokens {
		t.Fatalf("usage %+v from %+v", out.Usage, u)
	}

	reqBody := b.lower()
	req := parseReq(t, reqBody)

	if rec.StopReason == stopRefusal {
		checkRefusal(t, b, out, reqBody, req, orig)
		return
	}
	if out.Failure != nil {
		t.Fatalf("unexpected failure %+v", out.Failure)
	}

	// Storage: the entries' blocks, in order, are the original blocks, byte
	// for byte (compacted) and so JSON-equal; each run of text blocks is one
	// entry, every other block its own.
	var stored [][]byte
	var callIdx int
	for i, e := range added {
		data := b.get(e.Content)
		if e.Role != core.RoleAssistant || e.Content.MediaType != content.MediaJSON || e.TokenEstimate != provider.Estimate(data) {
			t.Fatalf("entry %d: %+v", i, e)
		}
		switch e.Content.ProviderKind {
		case ProviderKindText:
			if e.Kind != core.EntryMessage {
				t.Fatalf("text run as kind %s", e.Kind)
			}
			var arr []json.RawMessage
			if err := json.Unmarshal(data, &arr); err != nil || len(arr) == 0 {
				t.Fatalf("text run is not a non-empty array: %s", data)
			}
			if i > 0 && added[i-1].Content.ProviderKind == ProviderKindText {
				t.Fatal("two text runs back to back: a run must be one entry")
			}
			for _, x := range arr {
				if blockType(t, x) != typeText {
					t.Fatalf("text run holds %s", x)
				}
				stored = append(stored, x)
			}
			text, err := ProjectText(data)
			if err != nil || e.Preview != provider.Preview(text) {
				t.Fatalf("preview %q, text %q, %v", e.Preview, text, err)
			}
		case ProviderKindThinking, ProviderKindRedactedThinking:
			if e.Kind != core.EntryReasoning {
				t.Fatalf("thinking as kind %s", e.Kind)
			}
			stored = append(stored, data)
		case ProviderKindToolUse:
			if e.Kind != core.EntryToolCall {
				t.Fatalf("tool_use as kind %s", e.Kind)
			}
			var tu struct {
				ID    string          `json:"id"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			}
			if err := json.Unmarshal(data, &tu); err != nil {
				t.Fatal(err)
			}
			c := out.ToolCalls[callIdx]
			callIdx++
			if e.CallID != tu.ID || e.ToolName != tu.Name || c.CallID != tu.ID || c.Name != tu.Name {
				t.Fatalf("tool call facts %+v / %+v for %s", e, c, data)
			}
			if args := b.get(c.Arguments); !bytes.Equal(args, compact(t, tu.Input)) || c.Arguments.MediaType != content.MediaJSON {
				t.Fatalf("arguments blob %s, want %s", args, tu.Input)
			}
			stored = append(stored, data)
		case ProviderKindBlock:
			if e.Kind != core.EntryProviderOpaque {
				t.Fatalf("opaque block as kind %s", e.Kind)
			}
			stored = append(stored, data)
		default:
			t.Fatalf("entry %d has provider kind %q", i, e.Content.ProviderKind)
		}
	}
	if callIdx != len(out.ToolCalls) {
		t.Fatalf("%d tool calls, %d tool_call entries", len(out.ToolCalls), callIdx)
	}
	if len(stored) != len(orig) {
		t.Fatalf("stored %d blocks, the response has %d", len(stored), len(orig))
	}
	for i := range orig {
		if !bytes.Equal(stored[i], orig[i]) || canon(t, stored[i]) != canon(t, orig[i]) {
			t.Fatalf("block %d changed in storage:\n got %s\nwant %s", i, stored[i], orig[i])
		}
	}

	// Projections.
	checkProjections(t, b, added, orig)

	// The next request: system, then user / assistant / user.
	if len(req.System) != 1 || len(req.Messages) != 3 {
		t.Fatalf("want 1 system block and 3 messages, got %d and %d: %s", len(req.System), len(req.Messages), reqBody)
	}
	am := req.Messages[1]
	if am.Role != roleAssistant || len(am.Content) != len(orig) {
		t.Fatalf("assistant message has %d blocks, want %d", len(am.Content), len(orig))
	}
	for i, sent := range am.Content {
		want := orig[i]
		if bytes.Contains(want, []byte(`"file_id"`)) {
			// The one permitted change: no file_id in citations.
			if canon(t, sent) != canon(t, dropFileIDs(t, want)) {
				t.Fatalf("block %d: %s", i, sent)
			}
			continue
		}
		if !bytes.Equal(sent, want) {
			t.Fatalf("block %d not re-sent unchanged:\n got %s\nwant %s", i, sent, want)
		}
	}
	if blockType(t, orig[0]) == typeThinking || blockType(t, orig[0]) == typeRedactedThinking {
		if typ := blockType(t, am.Content[0]); typ != blockType(t, orig[0]) {
			t.Fatalf("assistant message starts with %s, not its thinking", typ)
		}
	}
	for i, sent := range am.Content {
		if bytes.Contains(sent, []byte(`"cache_control"`)) {
			t.Fatalf("assistant block %d carries a cache marker", i)
		}
	}

	// Tool results first in the next user message, in call order, then the
	// user's text.
	um := req.Messages[2]
	if um.Role != roleUser || len(um.Content) != len(out.ToolCalls)+1 {
		t.Fatalf("next user message: %d blocks for %d calls", len(um.Content), len(out.ToolCalls))
	}
	for i, c := range out.ToolCalls {
		var tr struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
		}
		if err := json.Unmarshal(um.Content[i], &tr); err != nil || tr.Type != typeToolResult || tr.ToolUseID != c.CallID {
			t.Fatalf("user block %d should answer %s: %s", i, c.CallID, um.Content[i])
		}
	}
	if last := withoutMarker(um.Content[len(um.Content)-1]); string(last) != `{"type":"text","text":"next question"}` {
		t.Fatalf("user text not after the tool results: %s", last)
	}
}

// checkRefusal: a refused output is never re-sent and fails the turn.
func checkRefusal(t *testing.T, b *ctxBuilder, out provider.Output, reqBody []byte, req reqBody, orig [][]byte) {
	if out.Failure == nil || out.Failure.Kind != FailureRefusal || out.Failure.Ref == nil || out.Failure.Message == "" {
		t.Fatalf("refusal did not fail the turn: %+v", out.Failure)
	}
	if text := b.get(*out.Failure.Ref); out.Failure.Ref.MediaType != content.MediaText || !strings.Contains(string(text), "refusal") {
		t.Fatalf("failure text %q (%s)", text, out.Failure.Ref.MediaType)
	}
	if len(out.Entries) != 0 || len(out.ToolCalls) != 0 {
		t.Fatalf("a refused output produced %d entries, %d calls", len(out.Entries), len(out.ToolCalls))
	}
	// No assistant message at all, empty or not: the two user turns merge.
	if len(req.Messages) != 1 || req.Messages[0].Role != roleUser || len(req.Messages[0].Content) != 2 {
		t.Fatalf("next request after a refusal: %s", reqBody)
	}
	for _, blk := range orig {
		if bytes.Contains(reqBody, blk) {
			t.Fatalf("refused block re-sent: %s", blk)
		}
	}
}

func checkProjections(t *testing.T, b *ctxBuilder, added []core.Entry, orig [][]byte) {
	var wantText, gotText strings.Builder
	wantCites, gotCites := 0, 0
	for _, o := range orig {
		var tb struct {
			Type      string            `json:"type"`
			Text      string            `json:"text"`
			Thinking  string            `json:"thinking"`
			Citations []json.RawMessage `json:"citations"`
		}
		if err := json.Unmarshal(o, &tb); err != nil {
			t.Fatal(err)
		}
		if tb.Type == typeText {
			wantText.WriteString(tb.Text)
			wantCites += len(tb.Citations)
		}
	}
	for _, e := range added {
		data := b.get(e.Content)
		switch e.Content.ProviderKind {
		case ProviderKindText:
			text, err := ProjectText(data)
			if err != nil {
				t.Fatal(err)
			}
			gotText.WriteString(text)
			cites, err := ProjectCitations(data)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cites {
				if c.Start < 0 || c.End > len(text) || c.Start >= c.End || !json.Valid(c.Raw) || bytes.Contains(c.Raw, []byte(`"cache_control"`)) {
					t.Fatalf("citation %+v for a %d-byte text", c, len(text))
				}
			}
			gotCites += len(cites)
		case ProviderKindThinking:
			var th struct {
				Thinking  string `json:"thinking"`
				Signature string `json:"signature"`
			}
			_ = json.Unmarshal(data, &th)
			got, err := ProjectReasoning(data)
			if err != nil || got != th.Thinking || (th.Signature != "" && strings.Contains(got, th.Signature)) {
				t.Fatalf("ProjectReasoning = %q, %v", got, err)
			}
		case ProviderKindRedactedThinking:
			if got, err := ProjectReasoning(data); err != nil || got != "" {
				t.Fatalf("redacted thinking projected to %q, %v", got, err)
			}
		}
	}
	if gotText.String() != wantText.String() {
		t.Fatalf("visible text %q, want %q", gotText.String(), wantText.String())
	}
	if gotCites != wantCites {
		t.Fatalf("%d citations projected, %d in the response", gotCites, wantCites)
	}
}

// dropFileIDs is the test's own version of the file_id rule (through maps:
// only for comparison, never for what is sent).
func dropFileIDs(t *testing.T, raw []byte) []byte {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if cites, ok := m["citations"].([]any); ok {
		for _, c := range cites {
			if cm, ok := c.(map[string]any); ok {
				delete(cm, "file_id")
			}
		}
	}
	out, _ := json.Marshal(m)
	return out
}
