package core_test

import (
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// The golden log holds no text shaped like a digest, so there the typed refs
// of every event must be exactly its exact-ref strings: a typed field the
// walk missed would show up here.
func TestEventRefs_AreEveryRefOfTheGoldenLog(t *testing.T) {
	for _, ev := range readGoldenLog(t) {
		got, err := core.EventRefs(ev)
		if err != nil {
			t.Fatal(err)
		}
		want, err := content.ExtractRefs(ev.Payload)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("event %d (%s): typed refs %v, ref strings %v", ev.Seq, ev.Kind, got, want)
		}
	}
	for kind := range payloadTypes {
		if _, err := core.EventRefs(core.Event{Kind: kind, Version: core.EventVersion, Payload: []byte(`{}`)}); err != nil {
			t.Errorf("EventRefs does not know %s: %v", kind, err)
		}
	}
}

func TestSpec_HashShapedTextCreatesNoRetentionRelationship(t *testing.T) {
	// Digests of bytes nobody stored: as text, they are only text.
	userText := content.Sum([]byte("never uploaded")).String()
	modelText := content.Sum([]byte("never uploaded either")).String()
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input(userText)})
	h.answer(modelText)
	h.expectIdle()
	var previews int
	for _, ev := range h.events {
		refs, err := core.EventRefs(ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range refs {
			if s := d.String(); s == userText || s == modelText {
				t.Fatalf("event %d (%s) holds the text %s as a ref", ev.Seq, ev.Kind, s)
			}
		}
		if exact, _ := content.ExtractRefs(ev.Payload); len(exact) > len(refs) {
			previews++ // the preview carries the text as a string
		}
	}
	if previews == 0 {
		t.Fatal("no event carried the hash-shaped text; the test proves nothing")
	}
}
