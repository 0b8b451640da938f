package runtime

import (
	"bytes"
	"context"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

// What a generation holds until its write is read with the store's blobs,
// one at a time or many at once.
func TestStagedBlobsAreReadWithTheStores(t *testing.T) {
	ctx := context.Background()
	mem := blob.NewMemory()
	stored, err := mem.Put(ctx, []byte("stored before"))
	if err != nil {
		t.Fatal(err)
	}
	_, s := (&Executor{Blobs: mem, Files: store.NewMemory(mem)}).stage(true)
	held, err := s.Put(ctx, []byte("held by the generation"))
	if err != nil {
		t.Fatal(err)
	}
	absent := content.Sum([]byte("never stored"))
	got, err := s.GetMany(ctx, []content.Digest{stored, held, absent})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[stored], []byte("stored before")) || !bytes.Equal(got[held], []byte("held by the generation")) {
		t.Fatalf("GetMany = %q; want the stored and the held blob", got)
	}
	if _, ok := got[absent]; ok || len(got) != 2 {
		t.Fatalf("GetMany returned %d blobs, want 2", len(got))
	}
	if data, err := s.Get(ctx, held); err != nil || string(data) != "held by the generation" {
		t.Fatalf("Get of the held blob: %q, %v", data, err)
	}
}
