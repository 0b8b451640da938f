package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// acceptedAssistantFields are the members an assistant message in a request
// may carry (openai-python ChatCompletionAssistantMessageParam), plus the
// reasoning field when the endpoint asks for it.
var acceptedAssistantFields = map[string]bool{
	"role": true, "content": true, "refusal": true, "tool_calls": true,
	"name": true, "audio": true, "function_call": true,
}

// TestPayloads runs every recorded Chat Completions response through decode,
// storage, projection and the next request's lowering.
func TestPayloads(t *testing.T) {
	for _, path := range payloadFiles(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			for _, field := range []string{"", "reasoning_content"} {
				checkPayload(t, name, field)
			}
		})
	}
}

func checkPayload(t *testing.T, name, reasoningField string) {
	body := readPayload(t, name)
	orig := originalMessage(t, body)

	b := newCtx(t)
	b.instructions("instructions.base", "You are terse.")
	b.user("question")
	out, calls := b.decode(body)
	b.user("next question")

	// Entry order: reasoning, message, tool calls.
	var origReasoningField string
	for _, f := range []string{"reasoning_content", "reasoning"} {
		if s, ok := rawjson.String(orig[f]); ok && s != "" && origReasoningField == "" {
			origReasoningField = f
		}
	}
	i := 0
	if origReasoningField != "" {
		r := out[i]
		i++
		if r.Kind != core.EntryReasoning || r.Content.ProviderKind != ProviderKindReasoning || r.Role != core.RoleAssistant {
			t.Fatalf("first entry should be reasoning: %+v", r)
		}
		stored := b.get(r.Content)
		rm := members(t, stored)
		if string(rm["text"]) != string(orig[origReasoningField]) {
			t.Fatalf("reasoning text bytes changed")
		}
		if s, _ := rawjson.String(rm["field"]); s != origReasoningField {
			t.Fatalf("reasoning field = %s, want %s", rm["field"], origReasoningField)
		}
		want, _ := rawjson.String(orig[origReasoningField])
		if got, err := ProjectReasoning(stored); err != nil || got != want {
			t.Fatalf("ProjectReasoning = %q, %v", got, err)
		}
	}
	msgEntry := out[i]
	i++
	if msgEntry.Kind != core.EntryMessage || msgEntry.Role != core.RoleAssistant || msgEntry.Content.ProviderKind != ProviderKindMessage || msgEntry.Content.MediaType != content.MediaJSON {
		t.Fatalf("message entry: %+v", msgEntry)
	}
	if len(out)-i != len(calls) {
		t.Fatalf("%d entries after the message, %d tool calls", len(out)-i, len(calls))
	}

	// The stored message is the original minus tool_calls and reasoning.
	stored := b.get(msgEntry.Content)
	want := map[string]json.RawMessage{}
	for k, v := range orig {
		if k != "tool_calls" && k != "reasoning_content" && k != "reasoning" {
			want[k] = v
		}
	}
	wantJSON, _ := json.Marshal(want)
	if canon(t, stored) != canon(t, wantJSON) {
		t.Fatalf("stored message not JSON-equal to the original minus tool_calls/reasoning:\n got %s\nwant %s", stored, wantJSON)
	}
	sm := members(t, stored)
	for _, f := range []string{"content", "refusal", "annotations"} {
		if ov, ok := orig[f]; ok {
			if !bytes.Equal(sm[f], compact(t, ov)) {
				t.Fatalf("stored %s bytes changed", f)
			}
		}
	}
	if msgEntry.TokenEstimate != provider.Estimate(stored) {
		t.Fatalf("token estimate %+v", msgEntry.TokenEstimate)
	}

	// Projection: content, else refusal.
	wantText, _ := rawjson.String(orig["content"])
	if wantText == "" {
		wantText, _ = rawjson.String(orig["refusal"])
	}
	if got, err := ProjectText(stored); err != nil || got != wantText {
		t.Fatalf("ProjectText = %q, %v; want %q", got, err, wantText)
	}
	if msgEntry.Preview != provider.Preview(wantText) {
		t.Fatalf("preview %q", msgEntry.Preview)
	}

	// Tool calls: the raw object is stored, the arguments string is its own blob.
	var origCalls []json.RawMessage
	if len(orig["tool_calls"]) > 0 {
		if err := json.Unmarshal(orig["tool_calls"], &origCalls); err != nil {
			t.Fatal(err)
		}
	}
	if len(origCalls) != len(calls) {
		t.Fatalf("%d tool calls decoded, %d in the response", len(calls), len(origCalls))
	}
	for j, oc := range origCalls {
		e := out[i+j]
		if e.Kind != core.EntryToolCall || e.Content.ProviderKind != ProviderKindToolCall || e.CallID != calls[j].CallID || e.ToolName != calls[j].Name {
			t.Fatalf("tool call entry %d: %+v", j, e)
		}
		if !bytes.Equal(b.get(e.Content), compact(t, oc)) {
			t.Fatalf("tool call %d bytes changed", j)
		}
		om := members(t, oc)
		fm := members(t, om["function"])
		id, _ := rawjson.String(om["id"])
		fname, _ := rawjson.String(fm["name"])
		args, _ := rawjson.String(fm["arguments"])
		if calls[j].CallID != id || calls[j].Name != fname {
			t.Fatalf("tool call %d facts: %+v", j, calls[j])
		}
		if got := b.get(calls[j].Arguments); string(got) != args || calls[j].Arguments.MediaType != content.MediaJSON {
			t.Fatalf("arguments blob %q (%s), want %q", got, calls[j].Arguments.MediaType, args)
		}
	}

	// The next request.
	req := provider.Request{SessionID: "s1", Model: core.ModelSelection{ProviderID: "p", APIKind: APIKind, Model: "m"}, Entries: b.entries}
	reqBody, err := Lower(context.Background(), b.blobs, req, LowerOptions{ReasoningField: reasoningField})
	if err != nil {
		t.Fatal(err)
	}
	msgs := requestMessages(t, reqBody)
	if len(msgs) != 4+len(calls) {
		t.Fatalf("want system, user, assistant, %d tool, user; got %d messages: %s", len(calls), len(msgs), reqBody)
	}
	am := msgs[2]
	if string(am["role"]) != `"assistant"` {
		t.Fatalf("message 2 is not the assistant: %s", reqBody)
	}
	for k := range am {
		if !acceptedAssistantFields[k] && k != reasoningField {
			t.Fatalf("assistant message carries %q, which a request does not accept", k)
		}
	}
	if _, ok := am["annotations"]; ok {
		t.Fatal("annotations were sent")
	}
	if canon(t, am["content"]) != canon(t, orig["content"]) {
		t.Fatalf("content not re-sent JSON-equal: %s vs %s", am["content"], orig["content"])
	}
	if canon(t, am["refusal"]) != canon(t, orig["refusal"]) {
		t.Fatalf("refusal not re-sent JSON-equal: %s vs %s", am["refusal"], orig["refusal"])
	}
	if reasoningField != "" && origReasoningField != "" {
		if string(am[reasoningField]) != string(orig[origReasoningField]) {
			t.Fatalf("reasoning not re-sent under %s", reasoningField)
		}
	} else {
		for _, f := range []string{"reasoning_content", "reasoning"} {
			if _, ok := am[f]; ok {
				t.Fatalf("reasoning %s sent though the endpoint did not ask", f)
			}
		}
	}
	var sentCalls []json.RawMessage
	if len(am["tool_calls"]) > 0 {
		if err := json.Unmarshal(am["tool_calls"], &sentCalls); err != nil {
			t.Fatal(err)
		}
	}
	if len(sentCalls) != len(origCalls) {
		t.Fatalf("sent %d tool calls, want %d", len(sentCalls), len(origCalls))
	}
	for j := range origCalls {
		om, sm := members(t, origCalls[j]), members(t, sentCalls[j])
		ofn, sfn := members(t, om["function"]), members(t, sm["function"])
		for _, pair := range [][2]json.RawMessage{{om["id"], sm["id"]}, {om["type"], sm["type"]}, {ofn["name"], sfn["name"]}, {ofn["arguments"], sfn["arguments"]}} {
			if !bytes.Equal(pair[0], pair[1]) {
				t.Fatalf("tool call %d: %s re-sent as %s", j, pair[0], pair[1])
			}
		}
		// Answered by a role:tool message right after the assistant message.
		tm := msgs[3+j]
		if string(tm["role"]) != `"tool"` || string(tm["tool_call_id"]) != string(om["id"]) {
			t.Fatalf("message %d should answer %s: %v", 3+j, om["id"], tm)
		}
	}
}

func compact(t *testing.T, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
