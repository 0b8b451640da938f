package responses

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
		file    string
		id      string
		usage   core.Usage
		calls   []string // call_id/name
		kinds   string   // entry kinds, comma-separated, first letter each
		failure string
		failMsg string
	}{
		{file: "api-reference-file-search.json", id: "resp_67ccf4c55fc48190b71bd0463ad3306d09504fb6872380d7",
			usage: core.Usage{InputTokens: 18307, OutputTokens: 348}, kinds: "p,m"},
		{file: "api-reference-function-call.json", id: "resp_67ca09c5efe0819096d0511c92b8c890096610f474011cc0",
			usage: core.Usage{InputTokens: 291, OutputTokens: 23}, calls: []string{"call_unLAR8MvFNptuiZK6K6HCy5k/get_current_weather"}, kinds: "t"},
		{file: "api-reference-web-search.json", id: "resp_67ccf18ef5fc8190b16dbee19bc54e5f087bb177ab789d5c",
			usage: core.Usage{InputTokens: 328, OutputTokens: 356}, kinds: "p,m"},
		{file: "file-search-citations.json", id: "resp_0365d26c32c64c650068cabb02fea4819495862c2bc58440ad",
			usage: core.Usage{InputTokens: 3678, OutputTokens: 536, CachedInputTokens: 2304, ReasoningTokens: 448}, kinds: "r,p,r,m"},
		{file: "parallel-function-calls.json", id: "resp_67e547c48c9481918c5c4394464ce0c60ae6111e84dd5c08",
			calls: []string{"call_LWVp74L5HaH2KNvgVz9PJsrj/get_location", "call_YnRAWeTyxI91m5uNa5bxXwVO/get_location"}, kinds: "t,t"},
		{file: "reasoning-encrypted-summary.json", id: "resp_0f35ed53160b395301693cc957829881909359e7f80cdd20b5",
			usage: core.Usage{InputTokens: 865, OutputTokens: 163, ReasoningTokens: 128}, kinds: "r,m"},
		{file: "reasoning-function-call.json", id: "resp_68c42d28772c819684459966ee2201ed0e8bc41441c948f6",
			usage: core.Usage{InputTokens: 124, OutputTokens: 1926, ReasoningTokens: 1792}, calls: []string{"call_gL7JE6GDeGGsFubqO2XGytyO/update_plan"}, kinds: "r,t"},
		{file: "refusal.json", id: "resp_1234567890", usage: core.Usage{InputTokens: 81, OutputTokens: 11}, kinds: "m"}, // a refusal is the answer
		{file: "web-search-encrypted-reasoning.json", id: "resp_0e3d55e9502941380068c4aa9a62f48195a373978ed720ac63",
			usage: core.Usage{InputTokens: 115886, OutputTokens: 1720, CachedInputTokens: 92160, ReasoningTokens: 1472}, kinds: "r,p,r,p,r,p,r,p,r,p,r,p,r,m"},
		{file: "web-search-sources.json", id: "resp_0953eda47ee17412006933306199c88195b44f9cf2986e1d5b",
			usage: core.Usage{InputTokens: 19681, OutputTokens: 3773, CachedInputTokens: 3712, ReasoningTokens: 3136}, kinds: "r,p,r,p,r,p,r,m"},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.file] = true
		t.Run(c.file, func(t *testing.T) {
			out, err := Decode(context.Background(), blob.NewMemory(), readPayload(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if out.ResponseID != c.id || out.Finish != "completed" || out.Usage != c.usage {
				t.Fatalf("facts: id %q finish %q usage %+v", out.ResponseID, out.Finish, out.Usage)
			}
			var calls, kinds []string
			for _, tc := range out.ToolCalls {
				calls = append(calls, tc.CallID+"/"+tc.Name)
			}
			for _, e := range out.Entries {
				kinds = append(kinds, e.Kind[:1])
			}
			if strings.Join(calls, ",") != strings.Join(c.calls, ",") {
				t.Fatalf("tool calls %v, want %v", calls, c.calls)
			}
			if strings.Join(kinds, ",") != c.kinds {
				t.Fatalf("entry kinds %v, want %s", kinds, c.kinds)
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
		if !covered[f] {
			t.Errorf("payload %s has no facts case", f)
		}
	}
}

func TestDecodeStatusFailures(t *testing.T) {
	msg := `{"type":"message","id":"msg_1","status":"incomplete","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"partial"}]}`
	cases := []struct {
		status, details, errJSON string
		finish, kind, message    string
	}{
		{"completed", "null", "null", "completed", "", ""},
		{"incomplete", `{"reason":"max_output_tokens"}`, "null", "incomplete:max_output_tokens", FailureMaxTokens, "the model stopped at its output token limit"},
		{"incomplete", `{"reason":"content_filter"}`, "null", "incomplete:content_filter", FailureContentFilter, "the provider's content filter stopped the output"},
		{"incomplete", `{"reason":"something_new"}`, "null", "incomplete:something_new", FailureIncomplete, "the provider returned an incomplete response: something_new"},
		{"incomplete", "null", "null", "incomplete", FailureIncomplete, "the provider returned an incomplete response"},
		{"failed", "null", `{"code":"server_error","message":"The model failed to generate a response."}`, "failed", FailureFailed, "The model failed to generate a response."},
		{"failed", "null", "null", "failed", FailureFailed, "the provider reported the response as failed"},
		{"cancelled", "null", "null", "cancelled", FailureCancelled, "the provider cancelled the response"},
	}
	for _, c := range cases {
		body := `{"id":"resp_x","object":"response","status":"` + c.status + `","error":` + c.errJSON +
			`,"incomplete_details":` + c.details + `,"output":[` + msg + `]}`
		out, err := Decode(context.Background(), blob.NewMemory(), []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if out.Finish != c.finish {
			t.Errorf("%s %s: finish %q, want %q", c.status, c.details, out.Finish, c.finish)
		}
		switch {
		case c.kind == "" && out.Failure != nil:
			t.Errorf("%s: unexpected failure %+v", c.status, out.Failure)
		case c.kind != "" && (out.Failure == nil || out.Failure.Kind != c.kind || out.Failure.Message != c.message):
			t.Errorf("%s %s: failure %+v, want %s %q", c.status, c.details, out.Failure, c.kind, c.message)
		}
		if len(out.Entries) != 1 {
			t.Errorf("%s: the output is still stored", c.status)
		}
	}
}

func TestDecodeReasoningOnlyAtTokenLimit(t *testing.T) {
	// A reasoning model that runs out of output tokens while thinking returns
	// only a reasoning item: stored, and the run fails with max_tokens.
	body := `{"id":"resp_r","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},
		"output":[{"id":"rs_1","type":"reasoning","encrypted_content":"gAAA","summary":[]}],
		"usage":{"input_tokens":10,"output_tokens":16,"output_tokens_details":{"reasoning_tokens":16}}}`
	out, err := Decode(context.Background(), blob.NewMemory(), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if out.Failure == nil || out.Failure.Kind != FailureMaxTokens || len(out.Entries) != 1 || out.Entries[0].Kind != core.EntryReasoning {
		t.Fatalf("got %+v", out)
	}
}

func TestDecodeItemKinds(t *testing.T) {
	body := `{"id":"resp_k","status":"completed","output":[
		{"type":"compaction","id":"cmp_1","encrypted_content":"gAAAA-compacted"},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"kept user turn"}]},
		{"type":"message","role":"developer","content":[{"type":"input_text","text":"odd"}]},
		{"type":"image_generation_call","id":"ig_1","status":"completed","result":"iVBOR"},
		{"type":"shiny_future_item","id":"x_1","payload":{"z":1,"a":[true,null]}}
	]}`
	store := blob.NewMemory()
	out, err := Decode(context.Background(), store, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ kind, role, preview string }{
		{core.EntryCompaction, "", "compaction (15 bytes of encrypted context)"},
		{core.EntryMessage, core.RoleUser, "kept user turn"},
		{core.EntryProviderOpaque, "", "message (developer)"},
		{core.EntryProviderOpaque, core.RoleAssistant, "image_generation_call"},
		{core.EntryProviderOpaque, core.RoleAssistant, "shiny_future_item"},
	}
	if len(out.Entries) != len(want) || len(out.ToolCalls) != 0 || out.Failure != nil {
		t.Fatalf("got %+v", out)
	}
	for i, w := range want {
		e := out.Entries[i]
		if e.Kind != w.kind || e.Role != w.role || e.Preview != w.preview || e.Content.ProviderKind != ProviderKindItem {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
	data, _ := store.Get(context.Background(), out.Entries[4].Content.Digest)
	if string(data) != `{"type":"shiny_future_item","id":"x_1","payload":{"z":1,"a":[true,null]}}` {
		t.Fatalf("unknown item not kept whole: %s", data)
	}
}

func TestDecodeKeepsUnknownMembersOrderAndEscapes(t *testing.T) {
	// Whitespace goes; member order, unknown members and token bytes
	// (escapes, number spellings) stay.
	body := `{"output":[ { "type" : "message", "x_vendor" : {"b":1.50,"a":"\u00e9"}, "role":"assistant",
		"content" : [ {"type":"output_text","text":"hi \u2014 <b>","annotations":[],"logprobs":[]} ] } ],"status":"completed"}`
	store := blob.NewMemory()
	out, err := Decode(context.Background(), store, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := store.Get(context.Background(), out.Entries[0].Content.Digest)
	want := `{"type":"message","x_vendor":{"b":1.50,"a":"\u00e9"},"role":"assistant","content":[{"type":"output_text","text":"hi \u2014 <b>","annotations":[],"logprobs":[]}]}`
	if string(data) != want {
		t.Fatalf("stored %s\nwant   %s", data, want)
	}
	if out.Entries[0].Preview != "hi — <b>" {
		t.Fatalf("preview %q", out.Entries[0].Preview)
	}
}

func TestDecodeArgumentsMediaType(t *testing.T) {
	body := `{"status":"completed","output":[
		{"type":"function_call","id":"fc_a","call_id":"a","name":"f","arguments":"{\"x\":1}"},
		{"type":"function_call","id":"fc_b","call_id":"b","name":"g","arguments":"not json"},
		{"type":"function_call","id":"fc_c","call_id":"c","name":"h"}]}`
	store := blob.NewMemory()
	out, err := Decode(context.Background(), store, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ media, data string }{{content.MediaJSON, `{"x":1}`}, {content.MediaText, "not json"}, {content.MediaJSON, "{}"}}
	for i, w := range want {
		ref := out.ToolCalls[i].Arguments
		data, _ := store.Get(context.Background(), ref.Digest)
		if ref.MediaType != w.media || string(data) != w.data || ref.ProviderKind != "" {
			t.Fatalf("call %d: %+v %q", i, ref, data)
		}
		if e := out.Entries[i]; e.CallID != out.ToolCalls[i].CallID || e.ToolName != out.ToolCalls[i].Name {
			t.Fatalf("entry %d: %+v", i, e)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for name, body := range map[string]string{
		"not json":       `<html>`,
		"error body":     `{"error":{"message":"overloaded"}}`,
		"output object":  `{"id":"x","output":{}}`,
		"item not obj":   `{"output":[1]}`,
		"item no type":   `{"output":[{"id":"x"}]}`,
		"call no callid": `{"output":[{"type":"function_call","name":"f","arguments":"{}"}]}`,
		"call no name":   `{"output":[{"type":"function_call","call_id":"c","arguments":"{}"}]}`,
		"args not str":   `{"output":[{"type":"function_call","call_id":"c","name":"f","arguments":{}}]}`,
		"bad usage":      `{"output":[],"usage":{"input_tokens":"many"}}`,
	} {
		_, err := Decode(context.Background(), blob.NewMemory(), []byte(body))
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%s: want *DecodeError, got %v", name, err)
		} else if strings.Contains(err.Error(), body) && len(body) > 20 {
			t.Errorf("%s: error quotes the body", name)
		}
	}
}

// failingStore fails every Put: storage trouble is not a decode error.
type failingStore struct{ blob.Store }

func (failingStore) Put(context.Context, []byte) (content.Digest, error) {
	return content.Digest{}, errors.New("disk full")
}

func TestDecodeStoreFailureIsNotADecodeError(t *testing.T) {
	_, err := Decode(context.Background(), failingStore{blob.NewMemory()}, readPayload(t, "reasoning-function-call.json"))
	var de *DecodeError
	if err == nil || errors.As(err, &de) || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("got %v", err)
	}
}
