package responses

import (
	"context"
	"testing"

	"github.com/cairn-agents/cairn/blob"
)

// A refusal-only answer (HTTP 200, status completed) is the turn's answer:
// no failure, its message stored, and its projection marked as a refusal.
func TestRefusalIsTheAnswer(t *testing.T) {
	blobs := blob.NewMemory()
	out, err := Decode(context.Background(), blobs, readPayload(t, "refusal.json"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Failure != nil || len(out.Entries) != 1 || out.Finish != "completed" {
		t.Fatalf("refusal: %+v", out)
	}
	const want = "I'm sorry, I cannot assist with that request."
	if out.Entries[0].Preview != want {
		t.Fatalf("preview %q", out.Entries[0].Preview)
	}
	native, err := blobs.Get(context.Background(), out.Entries[0].Content.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if text, refusal, err := ProjectMessage(native); err != nil || text != want || !refusal {
		t.Fatalf("ProjectMessage: %q, %v, %v", text, refusal, err)
	}
}

func TestProjectMessageMarksOnlyRefusals(t *testing.T) {
	cases := []struct {
		native  string
		text    string
		refusal bool
	}{
		{`{"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"No."}]}`, "No.", true},
		{`{"type":"message","role":"assistant","content":[{"type":"output_text","text":""},{"type":"refusal","refusal":"No."}]}`, "No.", true},
		{`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Partly."},{"type":"refusal","refusal":"No more."}]}`, "Partly.", false},
		{`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Yes."}]}`, "Yes.", false},
		{`{"type":"message","role":"assistant","content":[]}`, "", false},
		{`{"type":"message","role":"user","content":"plain"}`, "plain", false},
	}
	for _, c := range cases {
		text, refusal, err := ProjectMessage([]byte(c.native))
		if err != nil || text != c.text || refusal != c.refusal {
			t.Errorf("%s: %q, %v, %v; want %q, %v", c.native, text, refusal, err, c.text, c.refusal)
		}
	}
}
