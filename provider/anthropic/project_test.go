package anthropic

import (
	"context"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/blob"
)

func TestProjectCitationsPlaceTheCitedSpan(t *testing.T) {
	bs := blob.NewMemory()
	out, err := Decode(context.Background(), bs, readPayload(t, "citations-char-location.json"))
	if err != nil || len(out.Entries) != 1 {
		t.Fatalf("%+v %v", out, err)
	}
	data, _ := bs.Get(context.Background(), out.Entries[0].Content.Digest)
	text, _ := ProjectText(data)
	if text != "According to the documents:\nThe grass is green and the sky is blue." {
		t.Fatalf("text %q", text)
	}
	cites, err := ProjectCitations(data)
	if err != nil || len(cites) != 2 {
		t.Fatalf("%v %v", cites, err)
	}
	if got := text[cites[0].Start:cites[0].End]; got != "The grass is green" {
		t.Fatalf("first span %q", got)
	}
	if got := text[cites[1].Start:cites[1].End]; got != "the sky is blue" {
		t.Fatalf("second span %q", got)
	}
	if !strings.Contains(string(cites[1].Raw), `"cited_text":"The sky is blue."`) {
		t.Fatalf("raw citation %s", cites[1].Raw)
	}
}

func TestProjectionsRefuseOtherMaterial(t *testing.T) {
	if _, err := ProjectReasoning([]byte(`{"type":"text","text":"x"}`)); err == nil {
		t.Fatal("text projected as reasoning")
	}
	if _, err := ProjectText([]byte(`[{"type":"thinking","thinking":"x","signature":"s"}]`)); err == nil {
		t.Fatal("thinking projected as text")
	}
	if _, err := ProjectCitations([]byte(`not json`)); err == nil {
		t.Fatal("garbage projected")
	}
	if s, err := ProjectText([]byte(`{"type":"text","text":"one block"}`)); err != nil || s != "one block" {
		t.Fatalf("%q %v", s, err)
	}
	if got, err := ProjectReasoning([]byte(`{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4a"}`)); err != nil || got != "" {
		t.Fatalf("redacted data shown: %q %v", got, err)
	}
	if cites, err := ProjectCitations([]byte(`[{"type":"text","text":"plain","citations":null}]`)); err != nil || cites != nil {
		t.Fatalf("%v %v", cites, err)
	}
}
