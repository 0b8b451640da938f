package chat

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

func TestDecodeFacts(t *testing.T) {
	cases := []struct {
		file      string
		id        string
		finish    string
		usage     core.Usage
		calls     []string // call id/name
		failure   string
		failMsg   string
		reasoning bool
	}{
		{file: "api-reference-function-call.json", id: "chatcmpl-abc123", finish: "tool_calls",
			usage: core.Usage{InputTokens: 82, OutputTokens: 17}, calls: []string{"call_abc123/get_current_weather"}},
		{file: "cached-tokens.json", id: "chatcmpl-Dzkk95ZsXR00sJH1wE3qTGHxdGcrQ", finish: "stop",
			usage: core.Usage{InputTokens: 10122, OutputTokens: 1, CachedInputTokens: 9984}},
		{file: "deepseek-parallel-tool-calls.json", id: "cf7555ee-dd84-4512-a5b9-4ade2af0b0fc", finish: "tool_calls",
			usage: core.Usage{InputTokens: 220, OutputTokens: 39, CachedInputTokens: 192},
			calls: []string{"call_0_bd7f072c-b559-40ac-8605-b85186543ff1/search", "call_1_b7890944-9632-458e-93c1-89ae71996523/weather"}},
		{file: "deepseek-reasoner-tool-call.json", id: "7a630f5b-b7e6-4878-82f8-d77db164d42b", finish: "tool_calls",
			usage: core.Usage{InputTokens: 339, OutputTokens: 92, CachedInputTokens: 320, ReasoningTokens: 48},
			calls: []string{"call_00_9V0vrf86Pc9aelHCJMZqnJBo/weather"}, reasoning: true},
		{file: "deepseek-reasoner.json", id: "945bb10c-9bf3-47ff-a2a2-43bbe9705c72", finish: "stop",
			usage: core.Usage{InputTokens: 18, OutputTokens: 345, ReasoningTokens: 315}, reasoning: true},
		{file: "groq-parallel-tool-calls.json", id: "chatcmpl-1cbf7b0f-c99a-4807-a820-e8d91c585015", finish: "tool_calls",
			usage: core.Usage{InputTokens: 310, OutputTokens: 32}, calls: []string{"call_3whd/weather", "call_6xxk/search"}},
		{file: "groq-qwen3-reasoning-field.json", id: "chatcmpl-73cf8a54-d54e-400c-88b8-603d1a346d96", finish: "stop",
			usage: core.Usage{InputTokens: 17, OutputTokens: 649, ReasoningTokens: 570}, reasoning: true},
		{file: "refusal.json", id: "chatcmpl-9nYAG9LPNonX8DAyrkwYfemr3C8HC", finish: "stop",
			usage: core.Usage{InputTokens: 81, OutputTokens: 11}}, // a refusal is the answer, not a failure
		{file: "search-preview-annotations.json", id: "chatcmpl-70883d76-ce0c-44d9-946f-f839bb5c153b", finish: "stop",
			usage: core.Usage{InputTokens: 26, OutputTokens: 1044}},
		{file: "xai-reasoning-tool-call.json", id: "61c0468b-2a98-413e-f654-dbffcdbb62c1", finish: "tool_calls",
			usage: core.Usage{InputTokens: 291, OutputTokens: 26, CachedInputTokens: 244, ReasoningTokens: 189},
			calls: []string{"call_93562515/weather"}, reasoning: true},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.file] = true
		t.Run(c.file, func(t *testing.T) {
			out, err := Decode(context.Background(), blob.NewMemory(), readPayload(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if out.ResponseID != c.id || out.Finish != c.finish || out.Usage != c.usage {
				t.Fatalf("facts: id %q finish %q usage %+v", out.ResponseID, out.Finish, out.Usage)
			}
			var got []string
			for _, tc := range out.ToolCalls {
				got = append(got, tc.CallID+"/"+tc.Name)
			}
			if strings.Join(got, ",") != strings.Join(c.calls, ",") {
				t.Fatalf("tool calls %v, want %v", got, c.calls)
			}
			if (out.Entries[0].Kind == core.EntryReasoning) != c.reasoning {
				t.Fatalf("reasoning entry present = %v", !c.reasoning)
			}
			switch {
			case c.failure == "" && out.Failure != nil:
				t.Fatalf("unexpected failure %+v", out.Failure)
			case c.failure != "" && (out.Failure == nil || out.Failure.Kind != c.failure || out.Failure.Message != c.failMsg):
				t.Fatalf("failure %+v, want %s %q", out.Failure, c.failure, c.failMsg)
			}
		})
	}
	for _, f := range payloadFiles(t) {
		if name := f[strings.LastIndexAny(f, `/\`)+1:]; !covered[name] {
			t.Errorf("payload %s has no facts case", name)
		}
	}
}

func TestDecodeFinishFailures(t *testing.T) {
	for finish, kind := range map[string]string{"length": FailureMaxTokens, "content_filter": FailureContentFilter, "stop": ""} {
		body := `{"id":"x","choices":[{"message":{"role":"assistant","content":"partial"},"finish_reason":"` + finish + `"}]}`
		out, err := Decode(context.Background(), blob.NewMemory(), []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if kind == "" {
			if out.Failure != nil {
				t.Fatalf("%s: unexpected failure", finish)
			}
			continue
		}
		if out.Failure == nil || out.Failure.Kind != kind || out.Failure.Message == "" {
			t.Fatalf("%s: failure %+v", finish, out.Failure)
		}
		if len(out.Entries) != 1 {
			t.Fatalf("%s: the output is still stored", finish)
		}
	}
}

func TestDecodeArgumentsMediaType(t *testing.T) {
	body := `{"id":"x","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
		{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},
		{"id":"b","type":"function","function":{"name":"g","arguments":"not json"}},
		{"id":"c","type":"function","function":{"name":"h"}}]},"finish_reason":"tool_calls"}]}`
	store := blob.NewMemory()
	out, err := Decode(context.Background(), store, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ media, data string }{{content.MediaJSON, `{"x":1}`}, {content.MediaText, "not json"}, {content.MediaJSON, "{}"}}
	for i, w := range want {
		ref := out.ToolCalls[i].Arguments
		data, _ := store.Get(context.Background(), ref.Digest)
		if ref.MediaType != w.media || string(data) != w.data {
			t.Fatalf("call %d: %s %q", i, ref.MediaType, data)
		}
	}
}

func TestDecodeKeepsUnknownMembersAndOrder(t *testing.T) {
	// Whitespace goes, member order and token bytes (escapes, numbers) stay.
	body := `{"choices":[{"message":{ "role" : "assistant", "x_vendor" : {"b":1.50,"a":"\u00e9"},
		"reasoning_content": null, "content" : "hi \u2014 <b>", "tool_calls": [] }, "finish_reason":"stop"}]}`
	store := blob.NewMemory()
	out, err := Decode(context.Background(), store, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := store.Get(context.Background(), out.Entries[0].Content.Digest)
	want := `{"role":"assistant","x_vendor":{"b":1.50,"a":"\u00e9"},"content":"hi \u2014 <b>"}`
	if string(data) != want {
		t.Fatalf("stored %s\nwant   %s", data, want)
	}
}

func TestDecodeErrors(t *testing.T) {
	for name, body := range map[string]string{
		"not json":      `<html>`,
		"no choices":    `{"id":"x","choices":[]}`,
		"error body":    `{"error":{"message":"overloaded"}}`,
		"message array": `{"choices":[{"message":[]}]}`,
		"call no id":    `{"choices":[{"message":{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
		"call no name":  `{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"arguments":"{}"}}]}}]}`,
		"args not str":  `{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":{}}}]}}]}`,
	} {
		_, err := Decode(context.Background(), blob.NewMemory(), []byte(body))
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%s: want *DecodeError, got %v", name, err)
		}
	}
}

func TestProjectAnnotations(t *testing.T) {
	b := newCtx(t)
	out, _ := b.decode(readPayload(t, "search-preview-annotations.json"))
	ann, err := ProjectAnnotations(b.get(out[0].Content))
	if err != nil || !strings.Contains(string(ann), `"url_citation"`) {
		t.Fatalf("annotations %s, %v", ann, err)
	}
	if n := strings.Count(string(ann), `"type":"url_citation"`); n != 12 {
		t.Fatalf("%d url_citation annotations, want 12", n)
	}
}
