package view

import (
	"context"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
)

// The transcript of audio input displays its text, without the label the
// adapters add for the model.
func TestProjectText_TranscriptShowsItsText(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	ref, err := blob.PutRef(ctx, blobs, []byte(`{"text":"Buy acorns.","filename":"memo.m4a"}`), core.MediaTranscript, core.ProviderKindTranscript)
	if err != nil {
		t.Fatal(err)
	}
	if !HasText(ref) {
		t.Fatal("a transcript has no text form")
	}
	if got, err := ProjectText(ctx, blobs, ref); err != nil || got != "Buy acorns." {
		t.Fatalf("projected %q, %v", got, err)
	}
	bad, _ := blob.PutRef(ctx, blobs, []byte(`{"filename":"memo.m4a"}`), core.MediaTranscript, core.ProviderKindTranscript)
	if _, err := ProjectText(ctx, blobs, bad); err == nil {
		t.Fatal("a record without text projected")
	}
}
