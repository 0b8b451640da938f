package view

import (
	"context"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider/anthropic"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/responses"
)

func TestProjectText(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	put := func(data, mediaType, kind string) content.ContentRef {
		ref, err := blob.PutRef(ctx, blobs, []byte(data), mediaType, kind)
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	cases := []struct {
		name string
		ref  content.ContentRef
		want string
		err  bool
	}{
		{"plain text is itself", put("hello", content.MediaText, ""), "hello", false},
		{"chat message projects its content", put(`{"role":"assistant","content":"drafted","refusal":null,"annotations":[]}`, content.MediaJSON, chat.ProviderKindMessage), "drafted", false},
		{"chat refusal projects the refusal", put(`{"role":"assistant","content":null,"refusal":"I can't help with that."}`, content.MediaJSON, chat.ProviderKindMessage), "I can't help with that.", false},
		{"responses message item projects its output text", put(`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"from responses","annotations":[]}]}`, content.MediaJSON, responses.ProviderKindItem), "from responses", false},
		{"responses reasoning item projects its summary", put(`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"thought briefly"}],"encrypted_content":"gAAAA"}`, content.MediaJSON, responses.ProviderKindItem), "thought briefly", false},
		{"anthropic text run projects its blocks", put(`[{"type":"text","text":"from "},{"type":"text","text":"anthropic","citations":[]}]`, content.MediaJSON, anthropic.ProviderKindText), "from anthropic", false},
		{"anthropic thinking projects its visible text", put(`{"type":"thinking","thinking":"let me see","signature":"sig"}`, content.MediaJSON, anthropic.ProviderKindThinking), "let me see", false},
		{"media has no invented text", put("\x89PNG\r\n", "image/png", ""), "", false},
		{"unknown provider kind is an error", put(`{}`, content.MediaJSON, "someone.else"), "", true},
		{"absent blob is an error", content.ContentRef{Digest: content.Sum([]byte("absent")), MediaType: content.MediaText}, "", true},
	}
	for _, tc := range cases {
		got, err := ProjectText(ctx, blobs, tc.ref)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s: got %q, %v", tc.name, got, err)
		}
	}
}

func TestHasTextOnlyForTextAndProviderMaterial(t *testing.T) {
	for _, c := range []struct {
		ref  content.ContentRef
		want bool
	}{
		{content.ContentRef{MediaType: "audio/wav"}, false},
		{content.ContentRef{MediaType: "image/png"}, false},
		{content.ContentRef{MediaType: "application/octet-stream"}, false},
		{content.ContentRef{MediaType: content.MediaText}, true},
		{content.ContentRef{MediaType: content.MediaJSON, ProviderKind: "chat.message"}, true},
	} {
		if got := HasText(c.ref); got != c.want {
			t.Errorf("HasText(%s, %q) = %v", c.ref.MediaType, c.ref.ProviderKind, got)
		}
	}
}

// A message whose only visible part is a refusal projects the refusal text
// marked as one; anything with other visible text is not marked.
func TestProjectVisibleMarksRefusals(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	put := func(data, kind string) content.ContentRef {
		ref, err := blob.PutRef(ctx, blobs, []byte(data), content.MediaJSON, kind)
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	cases := []struct {
		name string
		ref  content.ContentRef
		want Visible
	}{
		{"chat refusal", put(`{"role":"assistant","refusal":"I can't help with that."}`, chat.ProviderKindMessage), Visible{Text: "I can't help with that.", Refusal: true}},
		{"chat content beside a refusal", put(`{"role":"assistant","content":"Partly.","refusal":"No more."}`, chat.ProviderKindMessage), Visible{Text: "Partly."}},
		{"responses refusal part", put(`{"type":"message","id":"m","role":"assistant","content":[{"type":"refusal","refusal":"No."}]}`, responses.ProviderKindItem), Visible{Text: "No.", Refusal: true}},
		{"responses text", put(`{"type":"message","id":"m","role":"assistant","content":[{"type":"output_text","text":"Yes.","annotations":[]}]}`, responses.ProviderKindItem), Visible{Text: "Yes."}},
		{"responses reasoning", put(`{"type":"reasoning","id":"rs","summary":[{"type":"summary_text","text":"hm"}]}`, responses.ProviderKindItem), Visible{Text: "hm"}},
		{"anthropic text", put(`[{"type":"text","text":"ok"}]`, anthropic.ProviderKindText), Visible{Text: "ok"}},
	}
	for _, tc := range cases {
		got, err := ProjectVisible(ctx, blobs, tc.ref)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// A tool result of several parts reads as its text, with a line naming
// each part that is not text.
func TestProjectTextOfParts(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	img, _ := blob.PutRef(ctx, blobs, []byte("\x89PNG"), "image/png", "")
	data, err := core.EncodeParts([]core.ContentPart{{Text: "a chart"}, {Ref: &img, Bytes: 4}})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := blob.PutRef(ctx, blobs, data, core.MediaParts, "")
	got, err := ProjectText(ctx, blobs, ref)
	if err != nil || got != "a chart\n[image/png, 4 bytes: not shown]" || !HasText(ref) {
		t.Fatalf("ProjectText = %q, %v", got, err)
	}
}
