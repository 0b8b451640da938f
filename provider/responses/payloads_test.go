package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// TestPayloads runs every recorded Responses body through decode, storage,
// projection and the next request's lowering.
func TestPayloads(t *testing.T) {
	for _, name := range payloadFiles(t) {
		t.Run(name, func(t *testing.T) { checkPayload(t, name) })
	}
}

// wantEntryKind is the entry kind each item type must become.
func wantEntryKind(typ string) string {
	switch typ {
	case "message":
		return core.EntryMessage
	case "function_call":
		return core.EntryToolCall
	case "reasoning":
		return core.EntryReasoning
	}
	return core.EntryProviderOpaque
}

func checkPayload(t *testing.T, name string) {
	body := readPayload(t, name)
	orig := originalItems(t, body)
	if len(orig) == 0 {
		t.Fatal("fixture has no output items")
	}

	b := newCtx(t)
	b.instructions("instructions.base", "You are terse.")
	b.user("question")
	out, calls := b.decode(body)
	b.user("next question")

	// One entry per item, in order, each blob the item itself.
	if len(out) != len(orig) {
		t.Fatalf("%d entries for %d output items", len(out), len(orig))
	}
	var origCalls []map[string]json.RawMessage
	for i, e := range out {
		om := members(t, orig[i])
		typ := str(t, om["type"])
		stored := b.get(e.Content)
		if !bytes.Equal(stored, compact(t, orig[i])) {
			t.Fatalf("item %d (%s): stored bytes differ from the compacted original", i, typ)
		}
		if canon(t, stored) != canon(t, orig[i]) {
			t.Fatalf("item %d (%s): not JSON-equal", i, typ)
		}
		if e.Content.ProviderKind != ProviderKindItem || e.Content.MediaType != content.MediaJSON || e.Content.Digest != content.Sum(stored) {
			t.Fatalf("item %d: content ref %+v", i, e.Content)
		}
		if e.Kind != wantEntryKind(typ) || e.Role != core.RoleAssistant {
			t.Fatalf("item %d (%s): entry kind %s role %q", i, typ, e.Kind, e.Role)
		}
		if e.TokenEstimate != provider.Estimate(stored) {
			t.Fatalf("item %d: token estimate %+v", i, e.TokenEstimate)
		}
		switch typ {
		case "function_call":
			origCalls = append(origCalls, om)
			c := calls[len(origCalls)-1]
			if e.CallID != str(t, om["call_id"]) || e.ToolName != str(t, om["name"]) || c.CallID != e.CallID || c.Name != e.ToolName {
				t.Fatalf("item %d: call facts %+v / entry %s %s", i, c, e.CallID, e.ToolName)
			}
			if got := b.get(c.Arguments); string(got) != str(t, om["arguments"]) || c.Arguments.MediaType != content.MediaJSON {
				t.Fatalf("item %d: arguments blob %q (%s)", i, got, c.Arguments.MediaType)
			}
		case "message":
			checkMessageProjections(t, stored, om, e)
		case "reasoning":
			checkReasoningProjection(t, stored, om, e)
		}
	}
	if len(calls) != len(origCalls) {
		t.Fatalf("%d tool calls for %d function_call items", len(calls), len(origCalls))
	}

	// The next request re-sends every item JSON-equal (here: byte-equal to
	// the compacted original), in order, right after the question.
	req := provider.Request{SessionID: "s1", Model: core.ModelSelection{ProviderID: "p", APIKind: APIKind, Model: "m"}, Entries: b.entries}
	reqBody, err := Lower(context.Background(), b.blobs, req, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := parseRequest(t, reqBody)
	if r.Instructions == nil || *r.Instructions != "You are terse." {
		t.Fatalf("instructions %v", r.Instructions)
	}
	in := r.Input
	if want := 1 + len(orig) + len(calls) + 1; len(in) != want {
		t.Fatalf("input has %d items, want %d: %s", len(in), want, reqBody)
	}
	if canon(t, in[0]) != `{"content":"question","role":"user"}` || canon(t, in[len(in)-1]) != `{"content":"next question","role":"user"}` {
		t.Fatalf("user messages: %s … %s", in[0], in[len(in)-1])
	}
	for i, o := range orig {
		sent := in[1+i]
		if canon(t, sent) != canon(t, o) || !bytes.Equal(sent, compact(t, o)) {
			t.Fatalf("item %d re-sent as\n%s\nwant\n%s", i, sent, compact(t, o))
		}
		om := members(t, o)
		if str(t, om["type"]) == "reasoning" {
			// Immediately followed by the item that followed it.
			next := in[2+i]
			if i+1 >= len(orig) || canon(t, next) != canon(t, orig[i+1]) {
				t.Fatalf("reasoning item %d is not immediately followed by its next item", i)
			}
			if _, ok := om["summary"]; ok {
				if _, sent := members(t, sent)["summary"]; !sent {
					t.Fatal("summary dropped")
				}
			}
		}
	}
	// Every function_call answered later by its function_call_output.
	for j, oc := range origCalls {
		res := members(t, in[1+len(orig)+j])
		if str(t, res["type"]) != "function_call_output" || string(res["call_id"]) != string(oc["call_id"]) {
			t.Fatalf("input %d should answer %s: %v", 1+len(orig)+j, oc["call_id"], res)
		}
		if !strings.Contains(str(t, res["output"]), str(t, oc["call_id"])) {
			t.Fatal("tool result text not sent")
		}
	}
	if v := inputViolation(in); v != "" {
		t.Fatalf("the API would reject this input: %s", v)
	}
}

// checkMessageProjections compares the projections with a test-side reading
// of the original item.
func checkMessageProjections(t *testing.T, stored []byte, om map[string]json.RawMessage, e core.Entry) {
	t.Helper()
	var parts []struct {
		Type        string            `json:"type"`
		Text        string            `json:"text"`
		Refusal     string            `json:"refusal"`
		Annotations []json.RawMessage `json:"annotations"`
	}
	if err := json.Unmarshal(om["content"], &parts); err != nil {
		t.Fatal(err)
	}
	var text, refusal strings.Builder
	var ann []string
	for _, p := range parts {
		switch p.Type {
		case "output_text":
			text.WriteString(p.Text)
			for _, a := range p.Annotations {
				ann = append(ann, canon(t, a))
			}
		case "refusal":
			refusal.WriteString(p.Refusal)
		}
	}
	want := text.String()
	if want == "" {
		want = refusal.String()
	}
	if want == "" {
		t.Fatal("fixture message without visible text")
	}
	if got, err := ProjectText(stored); err != nil || got != want {
		t.Fatalf("ProjectText = %q, %v; want %q", got, err, want)
	}
	if e.Preview != provider.Preview(want) {
		t.Fatalf("preview %q", e.Preview)
	}
	got, err := ProjectCitations(stored)
	if err != nil {
		t.Fatal(err)
	}
	var gotAnn []json.RawMessage
	if got != nil {
		if err := json.Unmarshal(got, &gotAnn); err != nil {
			t.Fatalf("citations are not a JSON array: %s", got)
		}
	}
	if len(gotAnn) != len(ann) {
		t.Fatalf("%d citations, want %d", len(gotAnn), len(ann))
	}
	for i := range ann {
		if canon(t, gotAnn[i]) != ann[i] {
			t.Fatalf("citation %d changed: %s", i, gotAnn[i])
		}
	}
}

func checkReasoningProjection(t *testing.T, stored []byte, om map[string]json.RawMessage, e core.Entry) {
	t.Helper()
	var summary []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(om["summary"], &summary); err != nil {
		t.Fatalf("reasoning without a summary array: %v", err)
	}
	var texts []string
	for _, s := range summary {
		if s.Type == "summary_text" {
			texts = append(texts, s.Text)
		}
	}
	want := strings.Join(texts, "\n\n")
	got, err := ProjectReasoning(stored)
	if err != nil || got != want {
		t.Fatalf("ProjectReasoning = %q, %v; want %q", got, err, want)
	}
	if enc := str(t, om["encrypted_content"]); enc != "" && (strings.Contains(got, enc[:16]) || strings.Contains(e.Preview, enc[:16])) {
		t.Fatal("encrypted content shown")
	}
	if e.Preview != provider.Preview(want) {
		t.Fatalf("preview %q", e.Preview)
	}
}
