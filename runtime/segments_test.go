package runtime_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/view"
)

func segments(n int, tag string) []core.CacheSegment {
	out := make([]core.CacheSegment, n)
	for i := range out {
		out[i] = core.CacheSegment{Kind: core.EntryMessage, Digest: core.SegmentDigest(fmt.Appendf(nil, "%s %d", tag, i)),
			Bytes: int64(100 + i), Entries: []string{fmt.Sprintf("e%d", i)}}
	}
	return out
}

// A long segment list is stored in chunks behind an index that declares
// exactly its chunks as edges; the next turn's list stores only the chunks
// that changed; and the list reads back whole.
func TestLongSegmentListsAreChunkedAndShareTheirPrefix(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	files := store.NewMemory(blobs)
	x := &runtime.Executor{Blobs: blobs, Files: files}

	first := segments(150, "turn")
	ref, err := runtime.PutSegments(x, ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if ref.MediaType != core.MediaRequestSegmentIndex {
		t.Fatalf("a 150-segment list is stored as %s, want an index", ref.MediaType)
	}
	data, err := blobs.Get(ctx, ref.Digest)
	if err != nil {
		t.Fatal(err)
	}
	want, err := content.ExtractRefs(data)
	if err != nil {
		t.Fatal(err)
	}
	kids, err := files.Children(ctx, ref.Digest)
	if err != nil || !slices.Equal(kids, want) || len(kids) != 3 {
		t.Fatalf("edges %v, %v; want exactly the index's 3 chunk refs %v", kids, err, want)
	}
	got, err := view.ReadSegments(ctx, blobs, ref)
	if err != nil || len(got) != len(first) || got[149].Digest != first[149].Digest || got[0].Entries[0] != "e0" {
		t.Fatalf("read back %d segments, %v", len(got), err)
	}

	// The next turn repeats 140 segments and adds 20: chunks 1 and 2 are
	// the same blobs, so it stores the changed third chunk and its index.
	before := len(blobs.Entries())
	next := append(slices.Clone(first[:140]), segments(20, "next")...)
	ref2, err := runtime.PutSegments(x, ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	if added := len(blobs.Entries()) - before; added != 2 {
		t.Fatalf("the next turn stored %d new blobs, want 2 (its index and its last chunk)", added)
	}
	got, err = view.ReadSegments(ctx, blobs, ref2)
	if err != nil || len(got) != 160 || got[150].Digest != next[150].Digest {
		t.Fatalf("read back the next list: %d segments, %v", len(got), err)
	}

	// A short list, or an executor without an edge store, keeps one list.
	for _, c := range []struct {
		x    *runtime.Executor
		segs []core.CacheSegment
	}{{x, segments(core.SegmentChunk, "short")}, {&runtime.Executor{Blobs: blobs}, first}} {
		ref, err := runtime.PutSegments(c.x, ctx, c.segs)
		if err != nil || ref.MediaType != core.MediaRequestSegments {
			t.Fatalf("stored as %s, %v; want one list", ref.MediaType, err)
		}
		if got, err := view.ReadSegments(ctx, blobs, ref); err != nil || len(got) != len(c.segs) {
			t.Fatalf("read back %d of %d, %v", len(got), len(c.segs), err)
		}
	}
}

// countingBlobs counts the blobs stored through it.
type countingBlobs struct {
	blob.Store
	puts int
}

func (c *countingBlobs) Put(ctx context.Context, data []byte) (content.Digest, error) {
	c.puts++
	return c.Store.Put(ctx, data)
}

// With Pieces, a chunk an earlier list stored is neither encoded nor
// stored again: the next turn puts its changed last chunk and its index,
// and the index is the one storing every chunk gives. A remembered chunk
// that was collected since is stored again, and the index's edges hold it.
func TestRepeatedSegmentChunksAreStoredOnce(t *testing.T) {
	ctx := context.Background()
	mem := blob.NewMemory()
	files := store.NewMemory(mem)
	counted := &countingBlobs{Store: mem}
	x := &runtime.Executor{Blobs: counted, Files: files, Pieces: provider.NewPieces(1 << 20)}
	plain := &runtime.Executor{Blobs: mem, Files: files}

	first := segments(150, "turn")
	if _, err := runtime.PutSegments(x, ctx, first); err != nil {
		t.Fatal(err)
	}
	next := append(slices.Clone(first[:140]), segments(20, "next")...)
	counted.puts = 0
	ref, err := runtime.PutSegments(x, ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	if counted.puts != 2 {
		t.Fatalf("the next turn stored %d blobs, want 2 (its last chunk and its index)", counted.puts)
	}
	if want, err := runtime.PutSegments(plain, ctx, next); err != nil || want != ref {
		t.Fatalf("the list is stored as %v, and as %v (%v) without remembered chunks", ref, want, err)
	}

	// Collect the first chunk, shared by both lists.
	ix, err := mem.Get(ctx, ref.Digest)
	if err != nil {
		t.Fatal(err)
	}
	index, err := core.DecodeSegmentIndex(ix)
	if err != nil {
		t.Fatal(err)
	}
	gone := index.Chunks[0].Ref
	if _, ok := mem.DeleteIf(gone, func(time.Time) bool { return true }); !ok {
		t.Fatal("could not delete the first chunk")
	}
	again, err := runtime.PutSegments(x, ctx, next)
	if err != nil || again != ref {
		t.Fatalf("after its first chunk was collected the list is stored as %v, %v; want %v", again, err, ref)
	}
	if _, err := mem.Get(ctx, gone); err != nil {
		t.Fatalf("the collected chunk was not stored again: %v", err)
	}
	kids, err := files.Children(ctx, ref.Digest)
	if err != nil || !slices.Contains(kids, gone) {
		t.Fatalf("the index's edges %v (%v) do not hold the chunk stored again", kids, err)
	}
	got, err := view.ReadSegments(ctx, mem, again)
	if err != nil || !reflect.DeepEqual(got, next) {
		t.Fatalf("read back %d segments, %v; want the list stored", len(got), err)
	}
}
