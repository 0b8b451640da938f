package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
)

func TestDecodeEntryKindsFollowBlocks(t *testing.T) {
	// thinking, server tool use, result, text run, server tool use, result,
	// text run …: one entry per non-text block, one per run of text.
	body := readPayload(t, "thinking-web-search.json")
	out, err := Decode(context.Background(), blob.NewMemory(), body)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	prevText := false
	for _, blk := range originalContent(t, body) {
		typ := blockType(t, blk)
		switch {
		case typ == typeText && prevText:
			continue
		case typ == typeText:
			want = append(want, core.EntryMessage)
		case typ == typeThinking:
			want = append(want, core.EntryReasoning)
		default:
			want = append(want, core.EntryProviderOpaque)
		}
		prevText = typ == typeText
	}
	var got []string
	for _, e := range out.Entries {
		got = append(got, e.Kind)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("kinds\n got %v\nwant %v", got, want)
	}
	if out.Entries[1].Preview == "" || !strings.HasPrefix(out.Entries[1].Preview, "server_tool_use web_search {") {
		t.Fatalf("opaque preview %q", out.Entries[1].Preview)
	}
}

func TestDecodeMaxTokensKeepsPartialOutputWithoutCalls(t *testing.T) {
	body := bytes.Replace(readPayload(t, "thinking-tool-use.json"), []byte(`"stop_reason": "tool_use"`), []byte(`"stop_reason": "max_tokens"`), 1)
	bs := blob.NewMemory()
	r, err := parseResponse(body)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeTurn(context.Background(), bs, []response{r}, turnInfo{maxTokens: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if out.Failure == nil || out.Failure.Kind != FailureMaxTokens || !strings.Contains(out.Failure.Message, "1024") || out.Failure.Ref == nil {
		t.Fatalf("failure %+v", out.Failure)
	}
	text, _ := bs.Get(context.Background(), out.Failure.Ref.Digest)
	if !strings.Contains(string(text), "maxTokens") || !strings.Contains(string(text), "msg_01447uK5PArU2QWTv63iMsdx") {
		t.Fatalf("failure text %q", text)
	}
	if len(out.ToolCalls) != 0 || len(out.Entries) != 2 || out.Entries[0].Kind != core.EntryReasoning || out.Entries[1].Kind != core.EntryMessage {
		t.Fatalf("entries %+v calls %+v", out.Entries, out.ToolCalls)
	}
}

func TestDecodeFailureDropsUnansweredServerToolUse(t *testing.T) {
	body := []byte(`{"id":"msg_x","type":"message","role":"assistant","content":[
		{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"a"}},
		{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},
		{"type":"text","text":"Searching again."},
		{"type":"server_tool_use","id":"srvtoolu_2","name":"web_search","input":{"query":"b"}}],
		"stop_reason":"model_context_window_exceeded","usage":{"input_tokens":10,"output_tokens":5}}`)
	out, err := Decode(context.Background(), blob.NewMemory(), body)
	if err != nil {
		t.Fatal(err)
	}
	if out.Failure == nil || out.Failure.Kind != FailureContextWindow {
		t.Fatalf("failure %+v", out.Failure)
	}
	var kinds []string
	for _, e := range out.Entries {
		kinds = append(kinds, e.Kind+":"+e.Preview)
	}
	if len(out.Entries) != 3 || strings.Contains(strings.Join(kinds, "|"), `"b"`) {
		t.Fatalf("the unanswered server tool use must go: %v", kinds)
	}
}

func TestDecodeNormalStopKeepsEverything(t *testing.T) {
	// The same blocks with end_turn: nothing is dropped (a server tool use
	// without its result is the provider's business then).
	body := []byte(`{"id":"msg_x","type":"message","content":[{"type":"server_tool_use","id":"s1","name":"web_search","input":{}}],"stop_reason":"end_turn"}`)
	out, err := Decode(context.Background(), blob.NewMemory(), body)
	if err != nil || out.Failure != nil || len(out.Entries) != 1 {
		t.Fatalf("%+v %v", out, err)
	}
}

func TestDecodeUnknownBlockIsOpaqueAndReplayed(t *testing.T) {
	b := newCtx(t)
	b.user("q")
	block := `{"type":"container_upload","file_id":"file_011","future":{"nested":[1,2.50,"\u00e9"]}}`
	out, added := b.decode([]byte(`{"id":"msg_u","type":"message","content":[` + block + `,{"type":"text","text":"done"}],"stop_reason":"end_turn"}`))
	if len(added) != 2 || added[0].Kind != core.EntryProviderOpaque || added[0].Content.ProviderKind != ProviderKindBlock {
		t.Fatalf("%+v", out.Entries)
	}
	if got := b.get(added[0].Content); string(got) != block {
		t.Fatalf("stored %s", got)
	}
	b.user("next")
	if !bytes.Contains(b.lower(), []byte(`"content":[`+block+`,{"type":"text","text":"done"}]`)) {
		t.Fatalf("unknown block not replayed byte for byte: %s", b.lower())
	}
}

func TestDecodeToolUseWithoutInput(t *testing.T) {
	bs := blob.NewMemory()
	out, err := Decode(context.Background(), bs, []byte(`{"type":"message","content":[{"type":"tool_use","id":"toolu_1","name":"noop"}],"stop_reason":"tool_use"}`))
	if err != nil || len(out.ToolCalls) != 1 {
		t.Fatalf("%+v %v", out, err)
	}
	if args, _ := bs.Get(context.Background(), out.ToolCalls[0].Arguments.Digest); string(args) != "{}" {
		t.Fatalf("arguments %s", args)
	}
}

func TestDecodeErrors(t *testing.T) {
	const secret = "SECRET-BODY-TEXT"
	cases := map[string]string{
		"not json":          `{"content": [` + secret,
		"not an object":     `["` + secret + `"]`,
		"error envelope":    `{"type":"error","error":{"type":"api_error","message":"` + secret + `"}}`,
		"no content":        `{"type":"message","id":"` + secret + `"}`,
		"content not array": `{"type":"message","content":"` + secret + `"}`,
		"untyped block":     `{"type":"message","content":[{"text":"` + secret + `"}]}`,
		"block not object":  `{"type":"message","content":["` + secret + `"]}`,
		"tool_use no id":    `{"type":"message","content":[{"type":"tool_use","name":"x","input":{"q":"` + secret + `"}}]}`,
		"tool_use no name":  `{"type":"message","content":[{"type":"tool_use","id":"t","input":{}}]}`,
		"bad usage":         `{"type":"message","content":[],"usage":{"input_tokens":"` + secret + `"}}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Decode(context.Background(), blob.NewMemory(), []byte(body))
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("want *DecodeError, got %v", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error quotes the body: %v", err)
			}
		})
	}
}

func TestDecodeSameBytesSameRefs(t *testing.T) {
	body := readPayload(t, "web-search.json")
	a, err := Decode(context.Background(), blob.NewMemory(), body)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Decode(context.Background(), blob.NewMemory(), body)
	for i := range a.Entries {
		if a.Entries[i].Content != b.Entries[i].Content {
			t.Fatalf("entry %d stored under different refs", i)
		}
	}
}

func TestDecodeTurnJoinsContinuations(t *testing.T) {
	r1, _ := parseResponse([]byte(`{"id":"msg_1","type":"message","content":[{"type":"text","text":"a"}],"stop_reason":"pause_turn","usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":4}}`))
	r2, _ := parseResponse([]byte(`{"id":"msg_2","type":"message","content":[{"type":"text","text":"b"}],"stop_reason":"end_turn","usage":{"input_tokens":11,"output_tokens":2,"cache_creation_input_tokens":3}}`))
	bs := blob.NewMemory()
	out, err := decodeTurn(context.Background(), bs, []response{r1, r2}, turnInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if out.ResponseID != "msg_2" || out.Finish != "end_turn" || out.Failure != nil {
		t.Fatalf("%+v", out)
	}
	if out.Usage != (core.Usage{InputTokens: 28, OutputTokens: 3, CachedInputTokens: 4, CacheWriteTokens: 3}) {
		t.Fatalf("usage %+v", out.Usage)
	}
	// Text across the pause is still one run: one entry.
	if len(out.Entries) != 1 {
		t.Fatalf("%d entries", len(out.Entries))
	}
	data, _ := bs.Get(context.Background(), out.Entries[0].Content.Digest)
	var arr []json.RawMessage
	if json.Unmarshal(data, &arr) != nil || len(arr) != 2 {
		t.Fatalf("stored %s", data)
	}
}
