package runtime_test

import (
	"context"
	"encoding/json"
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
)

// readSegments reads a stored list back.
func readSegments(ctx context.Context, blobs runtime.BlobGetter, ref content.ContentRef) ([]core.CacheSegment, error) {
	l, err := runtime.ReadSegments(ctx, blobs, ref, nil)
	return l.Segments, err
}

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
	ref, err := runtime.PutSegments(x, ctx, nil, first)
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
	got, err := readSegments(ctx, blobs, ref)
	if err != nil || len(got) != len(first) || got[149].Digest != first[149].Digest || got[0].Entries[0] != "e0" {
		t.Fatalf("read back %d segments, %v", len(got), err)
	}

	// The next turn repeats 140 segments and adds 20: chunks 1 and 2 are
	// the same blobs, so it stores the changed third chunk and its index.
	before := len(blobs.Entries())
	next := append(slices.Clone(first[:140]), segments(20, "next")...)
	ref2, err := runtime.PutSegments(x, ctx, nil, next)
	if err != nil {
		t.Fatal(err)
	}
	if added := len(blobs.Entries()) - before; added != 2 {
		t.Fatalf("the next turn stored %d new blobs, want 2 (its index and its last chunk)", added)
	}
	got, err = readSegments(ctx, blobs, ref2)
	if err != nil || len(got) != 160 || got[150].Digest != next[150].Digest {
		t.Fatalf("read back the next list: %d segments, %v", len(got), err)
	}

	// A short list, or an executor without an edge store, keeps one list.
	for _, c := range []struct {
		x    *runtime.Executor
		segs []core.CacheSegment
	}{{x, segments(core.SegmentChunk, "short")}, {&runtime.Executor{Blobs: blobs}, first}} {
		ref, err := runtime.PutSegments(c.x, ctx, nil, c.segs)
		if err != nil || ref.MediaType != core.MediaRequestSegments {
			t.Fatalf("stored as %s, %v; want one list", ref.MediaType, err)
		}
		if got, err := readSegments(ctx, blobs, ref); err != nil || len(got) != len(c.segs) {
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
	if _, err := runtime.PutSegments(x, ctx, nil, first); err != nil {
		t.Fatal(err)
	}
	next := append(slices.Clone(first[:140]), segments(20, "next")...)
	counted.puts = 0
	ref, err := runtime.PutSegments(x, ctx, nil, next)
	if err != nil {
		t.Fatal(err)
	}
	if counted.puts != 2 {
		t.Fatalf("the next turn stored %d blobs, want 2 (its last chunk and its index)", counted.puts)
	}
	if want, err := runtime.PutSegments(plain, ctx, nil, next); err != nil || want != ref {
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
	again, err := runtime.PutSegments(x, ctx, nil, next)
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
	got, err := readSegments(ctx, mem, again)
	if err != nil || !reflect.DeepEqual(got, next) {
		t.Fatalf("read back %d segments, %v; want the list stored", len(got), err)
	}

	// Held for the host's append, the same: the collected chunk is
	// noticed before anything is written, and comes in the batch.
	if _, ok := mem.DeleteIf(gone, func(time.Time) bool { return true }); !ok {
		t.Fatal("could not delete the first chunk")
	}
	held, writes, err := runtime.PutSegmentsHeld(x, ctx, nil, next)
	if err != nil || held != ref {
		t.Fatalf("held, the list is stored as %v, %v; want %v", held, err, ref)
	}
	if err := files.WriteBatch(ctx, writes); err != nil {
		t.Fatalf("writing the held batch: %v", err)
	}
	if _, err := mem.Get(ctx, gone); err != nil {
		t.Fatalf("the held batch did not store the collected chunk again: %v", err)
	}
}

// Storing a list whole again takes the chunks it shares with the last
// list stored whole from what the executor remembers of that list, and
// stores exactly what an executor that remembers nothing stores, turn
// after turn: through deltas whose tails change, and after a shared
// chunk was collected (it is stored again).
func TestWholeListsTakeTheChunksTheyShareWithTheLastWhole(t *testing.T) {
	ctx := context.Background()
	mem := blob.NewMemory()
	files := store.NewMemory(mem)
	x := &runtime.Executor{Blobs: mem, Files: files, Pieces: provider.NewPieces(1 << 20)}
	plain := &runtime.Executor{Blobs: mem, Files: files}

	segs := segments(150, "start")
	var lastX, lastPlain *content.ContentRef
	wholes := 0
	for turn := range 3*(core.SegmentDeltaDepth+1) + 1 {
		// Each turn changes the list's last segment and adds two; one
		// also changes its sixth (an instruction edit, say).
		segs = append(slices.Clone(segs[:len(segs)-1]), segments(3, fmt.Sprintf("turn %d", turn))...)
		if turn == 2*(core.SegmentDeltaDepth+1)+10 {
			segs[5] = segments(1, "edited")[0]
		}
		if turn == 2*(core.SegmentDeltaDepth+1) { // the third whole list: collect the first chunk first
			ix, err := mem.Get(ctx, firstIndex(t, ctx, mem, lastX).Digest)
			if err != nil {
				t.Fatal(err)
			}
			index, err := core.DecodeSegmentIndex(ix)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := mem.DeleteIf(index.Chunks[0].Ref, func(time.Time) bool { return true }); !ok {
				t.Fatal("could not delete the first chunk")
			}
		}
		refX, err := runtime.PutSegments(x, ctx, lastX, segs)
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		refPlain, err := runtime.PutSegments(plain, ctx, lastPlain, segs)
		if err != nil {
			t.Fatalf("turn %d, remembering nothing: %v", turn, err)
		}
		if refX != refPlain {
			t.Fatalf("turn %d: stored as %v, and as %v remembering nothing", turn, refX, refPlain)
		}
		if refX.MediaType == core.MediaRequestSegmentIndex {
			wholes++
		}
		got, err := readSegments(ctx, mem, refX)
		if err != nil || !reflect.DeepEqual(got, segs) {
			t.Fatalf("turn %d: read back %d segments, %v; want the %d stored", turn, len(got), err, len(segs))
		}
		lastX, lastPlain = &refX, &refPlain
	}
	if wholes != 4 {
		t.Fatalf("%d lists stored whole, want 4 (the first, then one every %d turns)", wholes, core.SegmentDeltaDepth+1)
	}
}

// firstIndex follows a stored list's deltas to the index they extend.
func firstIndex(t *testing.T, ctx context.Context, blobs blob.Store, ref *content.ContentRef) content.ContentRef {
	t.Helper()
	for ref.MediaType == core.MediaRequestSegmentDelta {
		data, err := blobs.Get(ctx, ref.Digest)
		if err != nil {
			t.Fatal(err)
		}
		d, err := core.DecodeSegmentDelta(data)
		if err != nil {
			t.Fatal(err)
		}
		ref = &d.Base
	}
	return *ref
}

// The next turn's list is stored as what it changes in the list of the
// session's last request, with an edge to it, for up to
// core.SegmentDeltaDepth turns; then whole again. An executor that
// remembers nothing (a restarted or another worker) stores the same blob
// as one that remembers the last list. Every list reads back as the one
// stored. A delta whose base was collected is not written: the list is
// stored whole.
func TestSegmentListsAreStoredAsDeltas(t *testing.T) {
	ctx := context.Background()
	mem := blob.NewMemory()
	files := store.NewMemory(mem)
	x := &runtime.Executor{Blobs: mem, Files: files, Pieces: provider.NewPieces(1 << 20)}
	list := segments(150, "turn")
	var refs []content.ContentRef
	var lists [][]core.CacheSegment
	var last *content.ContentRef
	for turn := range core.SegmentDeltaDepth + 2 {
		ref, err := runtime.PutSegments(x, ctx, last, list)
		if err != nil {
			t.Fatal(err)
		}
		restarted := &runtime.Executor{Blobs: mem, Files: files, Pieces: provider.NewPieces(1 << 20)}
		if again, err := runtime.PutSegments(restarted, ctx, last, list); err != nil || again != ref {
			t.Fatalf("turn %d: an executor that remembers nothing stores %v (%v), one that remembers %v", turn, again, err, ref)
		}
		refs, lists = append(refs, ref), append(lists, list)
		wantDelta := turn > 0 && turn <= core.SegmentDeltaDepth
		if (ref.MediaType == core.MediaRequestSegmentDelta) != wantDelta {
			t.Fatalf("turn %d stored as %s; want a delta: %v", turn, ref.MediaType, wantDelta)
		}
		if wantDelta {
			data, _ := mem.Get(ctx, ref.Digest)
			d, err := core.DecodeSegmentDelta(data)
			if err != nil || d.Base != refs[turn-1] || d.Keep != len(lists[turn-1])-1 || len(d.Segments) != 3 {
				t.Fatalf("turn %d: delta keeps %d and adds %d on %v (%v); want 3 added to all but the last segment of turn %d's list", turn, d.Keep, len(d.Segments), d.Base, err, turn-1)
			}
			if kids, err := files.Children(ctx, ref.Digest); err != nil || !slices.Equal(kids, []content.Digest{d.Base.Digest}) {
				t.Fatalf("turn %d: the delta holds %v (%v), want its base", turn, kids, err)
			}
		}
		// The next request drops the last segment and adds three.
		list = append(slices.Clone(list[:len(list)-1]), segments(3, fmt.Sprintf("turn %d", turn))...)
		last = &refs[turn]
	}
	for i, ref := range refs {
		got, err := readSegments(ctx, mem, ref)
		if err != nil || !reflect.DeepEqual(got, lists[i]) {
			t.Fatalf("list %d reads back as %d segments, %v; want the %d stored", i, len(got), err, len(lists[i]))
		}
	}

	// The last list's blob is collected: the next is stored whole, by an
	// executor that remembers it and by one that does not.
	if _, ok := mem.DeleteIf(last.Digest, func(time.Time) bool { return true }); !ok {
		t.Fatal("could not delete the last list")
	}
	for _, x := range []*runtime.Executor{x, {Blobs: mem, Files: files}} {
		ref, err := runtime.PutSegments(x, ctx, last, list)
		if err != nil || ref.MediaType == core.MediaRequestSegmentDelta {
			t.Fatalf("after its base was collected the list is stored as %s, %v; want it whole", ref.MediaType, err)
		}
		if got, err := readSegments(ctx, mem, ref); err != nil || !reflect.DeepEqual(got, list) {
			t.Fatalf("read back %d segments, %v", len(got), err)
		}
	}
}

// A reader refuses a delta chain longer than any writer stores, and a
// delta that keeps more segments than its base holds.
func TestSegmentDeltasAreReadWithinBounds(t *testing.T) {
	ctx := context.Background()
	mem := blob.NewMemory()
	put := func(media string, data []byte) content.ContentRef {
		ref, err := blob.PutRef(ctx, mem, data, media, "")
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	whole, _ := core.EncodeSegments(segments(3, "base"))
	ref := put(core.MediaRequestSegments, whole)
	over, _ := core.EncodeSegmentDelta(core.SegmentDelta{Base: ref, Keep: 4})
	if _, err := readSegments(ctx, mem, put(core.MediaRequestSegmentDelta, over)); err == nil {
		t.Fatal("a delta keeping 4 of 3 segments was read")
	}
	for i := range core.SegmentDeltaDepth + 1 {
		data, _ := core.EncodeSegmentDelta(core.SegmentDelta{Base: ref, Keep: 3, Segments: segments(1, fmt.Sprint(i))})
		ref = put(core.MediaRequestSegmentDelta, data)
		if i == core.SegmentDeltaDepth-1 {
			if got, err := readSegments(ctx, mem, ref); err != nil || len(got) != 4 {
				t.Fatalf("a chain of %d deltas reads as %d segments, %v", core.SegmentDeltaDepth, len(got), err)
			}
		}
	}
	if _, err := readSegments(ctx, mem, ref); err == nil {
		t.Fatalf("a chain of %d deltas was read", core.SegmentDeltaDepth+1)
	}
}

// A list of more than core.SegmentPage chunks is stored behind pages: its
// index names pages, a page its chunks, each with edges to exactly those.
// The next turn stores its changed chunk, that chunk's page and its index,
// and records edges for that page alone; an executor that remembers
// nothing stores the same index; every list reads back as stored.
func TestVeryLongSegmentListsArePaged(t *testing.T) {
	ctx := context.Background()
	mem, files, counted, edges, x := countingExecutor(1 << 20)

	n := 2*core.SegmentPage*core.SegmentChunk + 10 // 33 chunks: pages of 16, 16 and 1
	first := segments(n, "turn")
	ref, err := runtime.PutSegments(x, ctx, nil, first)
	if err != nil || ref.MediaType != core.MediaRequestSegmentIndex {
		t.Fatalf("stored as %v, %v; want an index", ref, err)
	}
	ix := decodeIndex(t, mem, ref.Digest)
	if len(ix.Chunks) != 0 || len(ix.Pages) != 3 || ix.Pages[0].Count != core.SegmentPage || ix.Pages[2].Count != 1 || ix.Depth != 0 {
		t.Fatalf("index %+v; want 3 pages of 16, 16 and 1 chunks", ix)
	}
	checkEdgesAreRefs(t, mem, files, ref.Digest, ix.Pages[0].Ref)
	checkReadsBack(t, mem, ref, first)

	checkNextTurn(t, x, mem, files, counted, edges, first, 3, 3+1,
		"its last chunk, that chunk's page and its index; edges from the index to its pages, and from that page to its chunk")
}

// A list of more than core.SegmentPage pages is stored behind pages of
// pages: its index names at most core.SegmentPage, each page of pages its
// pages, each with edges to exactly those. The next turn stores one
// changed page a level and records edges for those alone; an executor
// that remembers nothing stores the same index; every list reads back as
// stored, and a page that says another depth than its index does not.
func TestSegmentPagesNestWhileALevelHasMoreThanAPage(t *testing.T) {
	ctx := context.Background()
	mem, files, counted, edges, x := countingExecutor(8 << 20)

	// 257 chunks: 17 pages of chunks, in 2 pages of 16 and 1 pages.
	n := core.SegmentPage*core.SegmentPage*core.SegmentChunk + 10
	first := segments(n, "turn")
	ref, err := runtime.PutSegments(x, ctx, nil, first)
	if err != nil || ref.MediaType != core.MediaRequestSegmentIndex {
		t.Fatalf("stored as %v, %v; want an index", ref, err)
	}
	index := decodeIndex(t, mem, ref.Digest)
	if index.Depth != 1 || len(index.Pages) != 2 || index.Pages[0].Count != core.SegmentPage || index.Pages[1].Count != 1 {
		t.Fatalf("index %+v; want depth 1 and 2 pages of 16 and 1 pages", index)
	}
	upper := decodeIndex(t, mem, index.Pages[0].Ref)
	if upper.Depth != 0 || len(upper.Pages) != core.SegmentPage || len(upper.Chunks) != 0 {
		t.Fatalf("first page of pages %+v; want depth 0 and 16 pages", upper)
	}
	lower := decodeIndex(t, mem, upper.Pages[0].Ref)
	if len(lower.Chunks) != core.SegmentPage || len(lower.Pages) != 0 {
		t.Fatalf("first page %+v; want 16 chunks", lower)
	}
	checkEdgesAreRefs(t, mem, files, ref.Digest, index.Pages[0].Ref, upper.Pages[0].Ref)
	checkReadsBack(t, mem, ref, first)

	checkNextTurn(t, x, mem, files, counted, edges, first, 4, 2+1+1,
		"its last chunk, that chunk's page, that page's page and its index; edges from the index to its pages, and one to each changed page")

	// An index that claims one level more than its pages hold is refused.
	wrong, err := json.Marshal(core.SegmentIndex{Pages: index.Pages, Depth: 2})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := blob.PutRef(ctx, mem, wrong, core.MediaRequestSegmentIndex, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readSegments(ctx, mem, bad); err == nil {
		t.Fatal("an index of depth 2 over pages of depth 0 was read")
	}
}

// checkNextTurn stores first and 20 more segments through x, as the next
// turn does, and fails unless it stored puts blobs and recorded edges
// edges (want says which ones), an executor that remembers nothing stores the
// same list, and the list reads back as stored.
func checkNextTurn(t *testing.T, x *runtime.Executor, mem *blob.Memory, files *store.Memory, counted *countingBlobs, edges *countingEdges,
	first []core.CacheSegment, puts, recorded int, want string) {
	t.Helper()
	ctx := context.Background()
	next := append(slices.Clone(first), segments(20, "next")...)
	counted.puts, edges.recorded = 0, 0
	ref, err := runtime.PutSegments(x, ctx, nil, next)
	if err != nil {
		t.Fatal(err)
	}
	if counted.puts != puts || edges.recorded != recorded {
		t.Fatalf("the next turn stored %d blobs and recorded %d edges; want %d and %d: %s", counted.puts, edges.recorded, puts, recorded, want)
	}
	if fresh, err := runtime.PutSegments(&runtime.Executor{Blobs: mem, Files: files}, ctx, nil, next); err != nil || fresh != ref {
		t.Fatalf("stored as %v, and as %v (%v) by an executor that remembers nothing", ref, fresh, err)
	}
	checkReadsBack(t, mem, ref, next)
}

// checkEdgesAreRefs fails unless each parent's edges are exactly the refs
// its stored bytes hold.
func checkEdgesAreRefs(t *testing.T, blobs blob.Store, files *store.Memory, parents ...content.Digest) {
	t.Helper()
	ctx := context.Background()
	for _, parent := range parents {
		data, err := blobs.Get(ctx, parent)
		if err != nil {
			t.Fatal(err)
		}
		want, err := content.ExtractRefs(data)
		if err != nil {
			t.Fatal(err)
		}
		if kids, err := files.Children(ctx, parent); err != nil || !slices.Equal(kids, want) {
			t.Fatalf("%s has edges %v, %v; want exactly its refs %v", parent, kids, err, want)
		}
	}
}

// checkReadsBack fails unless the list stored at ref reads back as want.
func checkReadsBack(t *testing.T, blobs blob.Store, ref content.ContentRef, want []core.CacheSegment) {
	t.Helper()
	if got, err := readSegments(context.Background(), blobs, ref); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %d segments, %v; want the %d stored", len(got), err, len(want))
	}
}

// decodeIndex reads the stored index or page at d.
func decodeIndex(t *testing.T, blobs blob.Store, d content.Digest) core.SegmentIndex {
	t.Helper()
	data, err := blobs.Get(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := core.DecodeSegmentIndex(data)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// countingExecutor is an executor over memory stores, counting the blobs
// it puts and the edges it records, remembering pieces up to piecesBytes.
func countingExecutor(piecesBytes int64) (*blob.Memory, *store.Memory, *countingBlobs, *countingEdges, *runtime.Executor) {
	mem := blob.NewMemory()
	files := store.NewMemory(mem)
	counted := &countingBlobs{Store: mem}
	edges := &countingEdges{Memory: files}
	return mem, files, counted, edges, &runtime.Executor{Blobs: counted, Files: edges, Pieces: provider.NewPieces(piecesBytes)}
}

// countingEdges counts the edges recorded through it.
type countingEdges struct {
	*store.Memory
	recorded int
}

func (c *countingEdges) PutEdges(ctx context.Context, parent content.Digest, children []content.Digest) error {
	c.recorded += len(children)
	return c.Memory.PutEdges(ctx, parent, children)
}

// A chunk read once is kept decoded: reading a chunked list again, or the
// next one sharing its chunks, reads only the blobs not read before, and
// gives the same segments.
func TestSegmentChunksAreDecodedOnce(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	x := &runtime.Executor{Blobs: blobs, Files: store.NewMemory(blobs)}
	first := segments(3*core.SegmentChunk, "decoded once")
	ref, err := runtime.PutSegments(x, ctx, nil, first)
	if err != nil || ref.MediaType != core.MediaRequestSegmentIndex {
		t.Fatalf("stored as %s, %v; want an index", ref.MediaType, err)
	}
	next := append(slices.Clone(first), segments(10, "decoded once, more")...)
	ref2, err := runtime.PutSegments(x, ctx, nil, next)
	if err != nil || ref2.MediaType != core.MediaRequestSegmentIndex {
		t.Fatalf("stored as %s, %v; want an index", ref2.MediaType, err)
	}
	for _, c := range []struct {
		name string
		ref  content.ContentRef
		want []core.CacheSegment
		gets int
	}{
		{"first read", ref, first, 4},    // the index and its 3 chunks
		{"again", ref, first, 1},         // the index
		{"the next list", ref2, next, 2}, // its index and its new chunk
	} {
		g := &readingBlobs{Store: blobs}
		got, err := readSegments(ctx, g, c.ref)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Fatalf("%s: read %d segments, %v; want the %d stored", c.name, len(got), err, len(c.want))
		}
		if g.gets != c.gets {
			t.Errorf("%s: read %d blobs, want %d", c.name, g.gets, c.gets)
		}
	}
}

// The chunks of a list that no read kept decoded are read at once, as
// the first request of a session in a process reads its last list.
func TestSegmentChunksNotReadLatelyAreReadAtOnce(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	x := &runtime.Executor{Blobs: blobs, Files: store.NewMemory(blobs)}
	want := segments(3*core.SegmentChunk, "read at once")
	ref, err := runtime.PutSegments(x, ctx, nil, want)
	if err != nil || ref.MediaType != core.MediaRequestSegmentIndex {
		t.Fatalf("stored as %s, %v; want an index", ref.MediaType, err)
	}
	g := &readingMany{readingBlobs: readingBlobs{Store: blobs}}
	for _, c := range []struct {
		name       string
		gets, many int
	}{
		{"first read", 1, 1}, // the index, then its 3 chunks at once
		{"again", 2, 1},      // the index again; its chunks are kept decoded
	} {
		got, err := readSegments(ctx, g, ref)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: read %d segments, %v; want the %d stored", c.name, len(got), err, len(want))
		}
		if g.gets != c.gets || g.many != c.many {
			t.Fatalf("%s: %d blobs read singly and %d batches in all, want %d and %d", c.name, g.gets, g.many, c.gets, c.many)
		}
	}
}

// The bytes a request's facts report, of its whole list and of the part
// that begins the last list, are the sums of its segments', kept from
// turn to turn as lists are extended, cut back and stored whole again.
func TestSegmentBytesAreTheSumsOfTheSegments(t *testing.T) {
	ctx := context.Background()
	// With Pieces the last list is the one remembered; without, it is
	// read back from its blobs.
	for _, pieces := range []*provider.Pieces{provider.NewPieces(1 << 20), nil} {
		blobs := blob.NewMemory()
		sumsOfSegments(t, ctx, &runtime.Executor{Blobs: blobs, Files: store.NewMemory(blobs), Pieces: pieces})
	}
}

func sumsOfSegments(t *testing.T, ctx context.Context, x *runtime.Executor) {
	t.Helper()
	var last *content.ContentRef
	list := segments(5, "bytes")
	for turn := range 2*core.SegmentDeltaDepth + 5 {
		next := slices.Clone(list)
		if turn%5 == 4 { // the last segment changes, as a moved cache marker changes it
			next[len(next)-1] = segments(1, fmt.Sprintf("marked %d", turn))[0]
		}
		next = append(next, segments(2, fmt.Sprintf("turn %d", turn))...)
		ref, keep, kept, total, err := runtime.PutSegmentsBytes(x, ctx, last, next)
		if err != nil {
			t.Fatal(err)
		}
		if total != core.SegmentTotal(next) {
			t.Fatalf("turn %d: the list's bytes are %d, its segments' sum %d", turn, total, core.SegmentTotal(next))
		}
		if want := core.SegmentsPrefix(list, next); last != nil && (keep != want || kept != core.SegmentTotal(next[:keep])) {
			t.Fatalf("turn %d: keeps %d segments of %d bytes, want %d of %d", turn, keep, kept, want, core.SegmentTotal(next[:want]))
		}
		list, last = next, &ref
	}
}
