package anthropic

import (
	"context"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// transcript adds the transcript entry of an audio input, its record stored
// under the transcript media type and provider kind.
func (b *ctxBuilder) transcript(record string) {
	b.t.Helper()
	ref, err := blob.PutRef(context.Background(), b.blobs, []byte(record), core.MediaTranscript, core.ProviderKindTranscript)
	if err != nil {
		b.t.Fatal(err)
	}
	audio := content.Ref([]byte("m4a"), "audio/mp4", "")
	b.add(core.EntryInput{Kind: core.EntryMessage, Role: core.RoleUser, Content: ref, ProvenanceRef: &audio}, core.SourceUser)
}

func TestLower_TranscriptIsUserTextLabelledWithItsFile(t *testing.T) {
	b := newCtx(t)
	b.user("What does the memo say?")
	b.transcript(`{"text":"Buy acorns \"today\".","filename":"memo.m4a"}`)
	body := string(stripMarkers(b.lower()))
	want := `"messages":[{"role":"user","content":[{"type":"text","text":"What does the memo say?"},{"type":"text","text":"[Transcript of memo.m4a]\nBuy acorns \"today\"."}]}]`
	if !strings.Contains(body, want) {
		t.Fatalf("body %s\nwant it to contain %s", body, want)
	}

	bad := newCtx(t)
	bad.transcript(`{"filename":"memo.m4a"}`)
	if _, err := Lower(context.Background(), bad.blobs, bad.request()); err == nil || !strings.Contains(err.Error(), "no text") {
		t.Fatalf("a record without text lowered: %v", err)
	}
}
