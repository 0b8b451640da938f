package core

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cairn-agents/cairn/content"
)

// A chunked checkpoint (version 2, or 3 when its pages nest) is what hosts
// store: a small index blob plus content-addressed chunk blobs holding the
// context entries and the run records. Entries never change under their id
// and an ended run never changes again, so the chunks of a long session
// are the same blobs from one checkpoint to the next: a new checkpoint
// encodes and stores its index and the chunks that changed, and shares the
// rest with the one before.
// The writer records edges from the index to its pages, and from each page
// to what it names, so the index holds them against collection.
const (
	CheckpointChunkedVersion = 2
	// CheckpointNestedVersion is a chunked checkpoint whose index names
	// pages of pages (entryDepth, runDepth): a binary that reads only
	// version 2 refuses it and replays the log instead.
	CheckpointNestedVersion = 3
	checkpointEntriesFormat = "cairn.reducer-state.entries"
	checkpointRunsFormat    = "cairn.reducer-state.runs"
)

// Chunk boundaries are content-defined: a chunk ends after an item whose id
// hashes to a multiple of chunkSpread (about chunkSpread items a chunk), or
// at chunkMax items. A removal or replacement in the middle of the context
// then changes the chunk it falls in, not every chunk after it. Pages of
// chunk refs are cut the same way, by the chunks' digests: the index names
// pages, a page its chunks, so a new checkpoint writes (and records edges
// for) its index, the pages that changed and their changed chunks, and the
// index stays small however long the session grows.
const (
	chunkSpread = 32
	chunkMax    = 128
	pageSpread  = 16
	pageMax     = 64
)

// checkpointTopMax is the most pages an index names for one list before
// they are paged again, a level up. Every checkpoint writes its index's
// edges anew: with pages of pages, a 10,000-turn chat's index names 11
// pages for its two lists instead of 53, and a new checkpoint writes one
// changed page a level. A variable so that tests can nest small states.
var checkpointTopMax = pageSpread

const checkpointPageFormat = "cairn.reducer-state.page"

// checkpointIndex is the version 2 and 3 index: the state without its
// entries and runs, which are in the chunks it names, in order.
type checkpointIndex struct {
	checkpointHead
	// EntryPages and RunPages name pages of chunks. An index written
	// before pages names its chunks itself (EntryChunks, RunChunks).
	EntryPages  []CheckpointChunk `json:"entryPages,omitempty"`
	RunPages    []CheckpointChunk `json:"runPages,omitempty"`
	EntryChunks []CheckpointChunk `json:"entryChunks,omitempty"`
	RunChunks   []CheckpointChunk `json:"runChunks,omitempty"`
	// EntryDepth and RunDepth (version 3) are how many levels of pages
	// of pages lie above the pages of chunks: 0, or absent, when the
	// index names pages of chunks.
	EntryDepth int `json:"entryDepth,omitempty"`
	RunDepth   int `json:"runDepth,omitempty"`
}

// CheckpointChunk names one chunk (or page) of a chunked checkpoint and
// how many items (or chunks) it holds.
type CheckpointChunk struct {
	Ref   content.Digest `json:"ref"`
	Count int            `json:"count"`
}

// chunkBody is a chunk blob: entries or run records, in order.
type chunkBody[T any] struct {
	Format string `json:"format"`
	Items  []T    `json:"items"`
}

// CheckpointParts is a chunked checkpoint ready to store: the index, the
// pages and chunks the memo did not know (the checkpoint the memo came
// from stored the others), and the edges of the new pages.
type CheckpointParts struct {
	Index []byte
	// Named are the pages the index names, in order: its edges.
	Named []content.Digest
	// New are the blobs to store, chunks before the pages that name them.
	New []CheckpointBlob
	// Edges are each new page's edges to its chunks.
	Edges []CheckpointEdges
	// Memo remembers this checkpoint's chunks and pages, for the next one.
	Memo *CheckpointMemo
}

// CheckpointBlob is a chunk or page to store.
type CheckpointBlob struct {
	Digest content.Digest
	Data   []byte
}

// CheckpointEdges are a page's edges to its chunks.
type CheckpointEdges struct {
	Parent   content.Digest
	Children []content.Digest
}

// CheckpointMemo remembers the chunks and pages of a session's last stored
// checkpoint, each under its first item, with the items it holds, so the
// next checkpoint neither encodes them again nor builds anything for them:
// a chunk is known when the items at its place are the ones it holds, at
// the same addresses or else compared one by one. A chunk is remembered
// only when its items cannot change: any entry (an entry never changes
// under its id), and runs that have all ended (compared by id, status and
// end). The zero value and nil remember nothing.
type CheckpointMemo struct {
	entries map[string]entriesChunk
	runs    map[string]runsChunk
	pages   map[content.Digest]pageChunk
}

type entriesChunk struct {
	items []Entry // the state's own, shared: entries never change in place
	ref   content.Digest
	cut   bool // it ends at a boundary of its own (see nextCut)
}

type runsChunk struct {
	ids   []string // the state's own run order, shared: it only grows
	ends  []runEnd
	ref   content.Digest
	cut   bool
	edits uint64 // the state's endedRunEdits when this was remembered
}

// runEnd is what tells an ended run's record apart: it never changes again.
type runEnd struct {
	id, status string
	seq        int64
}

type pageChunk struct {
	items []CheckpointChunk
	ref   content.Digest
}

// EncodeCheckpointParts returns the state as a chunked checkpoint, encoding
// only the chunks memo does not know. Its bytes are the same with or
// without a memo.
func EncodeCheckpointParts(s *State, memo *CheckpointMemo) (CheckpointParts, error) {
	if memo == nil {
		memo = &CheckpointMemo{}
	}
	next := &CheckpointMemo{ // the last checkpoint's size, and a few more
		entries: make(map[string]entriesChunk, len(memo.entries)+4),
		runs:    make(map[string]runsChunk, len(memo.runs)+4),
		pages:   make(map[content.Digest]pageChunk, len(memo.pages)+4),
	}
	parts := CheckpointParts{Memo: next}
	ix := checkpointIndex{checkpointHead: s.checkpointHead()}
	ix.Version = CheckpointChunkedVersion
	// put encodes and stores a blob the memo did not know.
	put := func(v any) (content.Digest, error) {
		data, err := content.MarshalCanonical(v)
		if err != nil {
			return content.Digest{}, err
		}
		d := content.Sum(data)
		parts.New = append(parts.New, CheckpointBlob{Digest: d, Data: data})
		return d, nil
	}
	// paged groups a list's chunks into pages.
	paged := func(chunks []CheckpointChunk) ([]CheckpointChunk, error) {
		pages := []CheckpointChunk{}
		for _, pg := range cutChunks(len(chunks), func(i int) uint32 { return fnv32aDigest(chunks[i].Ref) }, pageSpread, pageMax) {
			refs := chunks[pg[0]:pg[1]]
			known, ok := memo.pages[refs[0].Ref]
			if !ok || !slices.Equal(known.items, refs) {
				d, err := put(chunkBody[CheckpointChunk]{Format: checkpointPageFormat, Items: refs})
				if err != nil {
					return nil, err
				}
				kids := make([]content.Digest, len(refs))
				for i, c := range refs {
					kids[i] = c.Ref
				}
				parts.Edges = append(parts.Edges, CheckpointEdges{Parent: d, Children: kids})
				known.ref = d
			}
			next.pages[refs[0].Ref] = pageChunk{items: refs, ref: known.ref}
			pages = append(pages, CheckpointChunk{Ref: known.ref, Count: len(refs)})
		}
		return pages, nil
	}
	// nested pages a list's chunks, then those pages, and so on while
	// there are more than checkpointTopMax, and says how many levels it
	// added above the pages of chunks. A level that would not shrink the
	// list (every page cut after one item) ends it.
	nested := func(chunks []CheckpointChunk) ([]CheckpointChunk, int, error) {
		pages, err := paged(chunks)
		depth := 0
		for err == nil && len(pages) > checkpointTopMax {
			var up []CheckpointChunk
			if up, err = paged(pages); err == nil && len(up) < len(pages) {
				pages, depth = up, depth+1
				continue
			}
			break
		}
		return pages, depth, err
	}
	// A remembered chunk that ends at a boundary of its own and whose
	// items are where they were (a State's entries and run order grow in
	// place, and entries are copied before any changes) is the chunk that
	// starts there again: its items need neither hashing nor comparing.
	// Any other chunk is cut by hashing its items, and known by comparing
	// them.
	entries := s.entries
	var entryChunks, runChunks []CheckpointChunk
	for from := 0; from < len(entries); {
		known, ok := memo.entries[entries[from].ID]
		to, cut := from+len(known.items), known.cut
		if !ok || !cut || to > len(entries) || &known.items[0] != &entries[from] {
			to, cut = nextCut(from, len(entries), func(i int) uint32 { return fnv32a(entries[i].ID) }, chunkSpread, chunkMax)
			if !ok || !sameEntries(known.items, entries[from:to]) {
				d, err := put(chunkBody[Entry]{Format: checkpointEntriesFormat, Items: entries[from:to]})
				if err != nil {
					return CheckpointParts{}, err
				}
				known.ref = d
			}
		}
		es := entries[from:to]
		next.entries[es[0].ID] = entriesChunk{items: es, ref: known.ref, cut: cut}
		entryChunks = append(entryChunks, CheckpointChunk{Ref: known.ref, Count: len(es)})
		from = to
	}
	ids := s.runOrder
	for from := 0; from < len(ids); {
		known, ok := memo.runs[ids[from]]
		to, cut := from+len(known.ids), known.cut
		if !ok || !cut || to > len(ids) || &known.ids[0] != &ids[from] {
			to, cut = nextCut(from, len(ids), func(i int) uint32 { return fnv32a(ids[i]) }, chunkSpread, chunkMax)
		}
		chunk := ids[from:to]
		// The same ids of the same state, whose ended runs no event has
		// touched since, are the runs remembered: neither looked up nor
		// compared (at 10,000 runs, 10,000 map lookups a checkpoint).
		// Another state's are compared by how they ended.
		here := ok && len(known.ids) == len(chunk) && &known.ids[0] == &chunk[0]
		if !ok || here && known.edits != s.endedRunEdits || !here && !s.runsEnded(known.ends, chunk) {
			rs := make([]runState, len(chunk))
			for i, id := range chunk {
				rs[i] = s.runs[id].record()
			}
			d, err := put(chunkBody[runState]{Format: checkpointRunsFormat, Items: rs})
			if err != nil {
				return CheckpointParts{}, err
			}
			known = runsChunk{ends: s.runEnds(chunk), ref: d}
		}
		if known.ends != nil { // remembered only once every run in it has ended
			known.ids, known.cut, known.edits = chunk, cut, s.endedRunEdits
			next.runs[chunk[0]] = known
		}
		runChunks = append(runChunks, CheckpointChunk{Ref: known.ref, Count: len(chunk)})
		from = to
	}
	var err error
	if ix.EntryPages, ix.EntryDepth, err = nested(entryChunks); err != nil {
		return CheckpointParts{}, err
	}
	if ix.RunPages, ix.RunDepth, err = nested(runChunks); err != nil {
		return CheckpointParts{}, err
	}
	if ix.EntryDepth > 0 || ix.RunDepth > 0 {
		ix.Version = CheckpointNestedVersion
	}
	for _, c := range append(slices.Clone(ix.EntryPages), ix.RunPages...) {
		parts.Named = append(parts.Named, c.Ref)
	}
	if parts.Index, err = content.MarshalCanonical(ix); err != nil {
		return CheckpointParts{}, err
	}
	return parts, nil
}

// sameEntries reports whether a remembered chunk holds the entries es: the
// same ids in the same order.
func sameEntries(known, es []Entry) bool {
	if len(known) != len(es) {
		return false
	}
	for i := range es {
		if known[i].ID != es[i].ID {
			return false
		}
	}
	return true
}

// runsEnded reports whether the runs ids are the ended runs a remembered
// chunk holds, as they ended.
func (s *State) runsEnded(known []runEnd, ids []string) bool {
	if len(known) != len(ids) {
		return false
	}
	for i, id := range ids {
		if known[i] != s.runEnd(id) {
			return false
		}
	}
	return true
}

// runEnd is how run id stands: how it ended, once it has.
func (s *State) runEnd(id string) runEnd {
	r := s.runs[id]
	return runEnd{id: id, status: r.Status, seq: r.EndedSeq}
}

// runEnds returns how the runs ids ended, or nil when one has not: its
// record may still change.
func (s *State) runEnds(ids []string) []runEnd {
	ends := make([]runEnd, len(ids))
	for i, id := range ids {
		ends[i] = s.runEnd(id)
		if st := ends[i].status; st != StatusCompleted && st != StatusFailed && st != StatusCancelled {
			return nil
		}
	}
	return ends
}

// cutChunks splits n items, whose ids hash to hash(i), into [from, to)
// ranges at content-defined boundaries (nextCut).
func cutChunks(n int, hash func(int) uint32, spread, max uint32) [][2]int {
	var out [][2]int
	for from := 0; from < n; {
		to, _ := nextCut(from, n, hash, spread, max)
		out = append(out, [2]int{from, to})
		from = to
	}
	return out
}

// nextCut returns where the chunk that starts at item from of n ends: after
// an item whose hash is a multiple of spread, or at max items (a boundary
// of its own: cut), or else at the last item, where more items would
// extend it.
func nextCut(from, n int, hash func(int) uint32, spread, max uint32) (to int, cut bool) {
	for i := from; i < n; i++ {
		if hash(i)%spread == 0 || uint32(i+1-from) == max {
			return i + 1, true
		}
	}
	return n, false
}

// fnv32a is hash/fnv's 32-bit FNV-1a of s, without a hasher and a copy
// of s per item: a checkpoint of a long session cuts every entry and run.
func fnv32a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// fnv32aDigest is fnv32a(d.String()) without the string: pages are cut by
// their chunks' digests in that form.
func fnv32aDigest(d content.Digest) uint32 {
	const hexDigits = "0123456789abcdef"
	h := uint32(2166136261)
	for i := 0; i < len(content.DigestPrefix); i++ {
		h = (h ^ uint32(content.DigestPrefix[i])) * 16777619
	}
	for _, b := range d {
		h = (h ^ uint32(hexDigits[b>>4])) * 16777619
		h = (h ^ uint32(hexDigits[b&15])) * 16777619
	}
	return h
}

// CheckpointChunkRefs returns the blobs a checkpoint's index names itself,
// in order: its pages (or, for an index written before pages, its chunks);
// none for a version 1 checkpoint, which holds everything itself. They are
// the index's edges.
func CheckpointChunkRefs(data []byte) ([]content.Digest, error) {
	ix, err := decodeIndex(data)
	if err != nil || ix == nil {
		return nil, err
	}
	var out []content.Digest
	for _, list := range [][]CheckpointChunk{ix.EntryPages, ix.RunPages, ix.EntryChunks, ix.RunChunks} {
		for _, c := range list {
			out = append(out, c.Ref)
		}
	}
	return out, nil
}

// CheckpointNeeds returns the blobs a checkpoint needs that have does not
// hold yet: the ones its index names, then, once those pages are held, the
// pages or chunks they name, a level at a time. A reader fetches them
// until it needs none, then calls DecodeCheckpointParts.
func CheckpointNeeds(data []byte, have map[content.Digest][]byte) ([]content.Digest, error) {
	ix, err := decodeIndex(data)
	if err != nil || ix == nil {
		return nil, err
	}
	// Each list is walked down from what the index names; levels counts
	// the levels of pages still above its chunks. Both lists go down
	// together, entries first, so that a version 2 index asks for its
	// pages, then for all its chunks, as it always has.
	lists := []struct {
		refs   []CheckpointChunk
		levels int
	}{{ix.EntryChunks, 0}, {ix.RunChunks, 0}}
	if len(ix.EntryPages) > 0 {
		lists[0].refs, lists[0].levels = ix.EntryPages, ix.EntryDepth+1
	}
	if len(ix.RunPages) > 0 {
		lists[1].refs, lists[1].levels = ix.RunPages, ix.RunDepth+1
	}
	var need []content.Digest
	for _, l := range lists {
		for _, c := range l.refs {
			if _, ok := have[c.Ref]; !ok {
				need = append(need, c.Ref)
			}
		}
	}
	for len(need) == 0 && (lists[0].levels > 0 || lists[1].levels > 0) {
		for i := range lists {
			if lists[i].levels == 0 {
				continue
			}
			var down []CheckpointChunk
			for _, pg := range lists[i].refs {
				refs, err := decodeChunk[CheckpointChunk](have, pg, checkpointPageFormat, nil)
				if err != nil {
					return nil, err
				}
				down = append(down, refs...)
			}
			for _, c := range down {
				if _, ok := have[c.Ref]; !ok {
					need = append(need, c.Ref)
				}
			}
			lists[i].refs, lists[i].levels = down, lists[i].levels-1
		}
	}
	return need, nil
}

// decodeIndex decodes a version 2 or 3 index; nil (and no error) for a
// blob of another version, which DecodeCheckpoint judges.
func decodeIndex(data []byte) (*checkpointIndex, error) {
	var head struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, &CheckpointError{"not JSON: " + err.Error()}
	}
	if head.Format != CheckpointFormat || head.Version != CheckpointChunkedVersion && head.Version != CheckpointNestedVersion {
		return nil, nil
	}
	var ix checkpointIndex
	if err := json.Unmarshal(data, &ix); err != nil {
		return nil, &CheckpointError{"not JSON: " + err.Error()}
	}
	return &ix, nil
}

// DecodeCheckpointParts rebuilds a state from a checkpoint blob of either
// version; a version 2 index needs its chunks' bytes, by digest. A chunk
// that is missing, does not hash to its digest, or does not hold the count
// the index says makes the checkpoint unusable.
func DecodeCheckpointParts(data []byte, chunks map[content.Digest][]byte) (*State, error) {
	ix, err := decodeIndex(data)
	if err != nil {
		return nil, err
	}
	if ix == nil {
		return decodeWhole(data)
	}
	cp := checkpoint{checkpointHead: ix.checkpointHead}
	cp.Version = CheckpointVersion
	entryChunks, err := unpage(chunks, ix.EntryPages, ix.EntryDepth, ix.EntryChunks)
	if err != nil {
		return nil, err
	}
	runChunks, err := unpage(chunks, ix.RunPages, ix.RunDepth, ix.RunChunks)
	if err != nil {
		return nil, err
	}
	cp.Entries = make([]Entry, 0, itemCount(entryChunks))
	cp.Runs = make([]runState, 0, itemCount(runChunks))
	for _, c := range entryChunks {
		if cp.Entries, err = decodeChunk(chunks, c, checkpointEntriesFormat, cp.Entries); err != nil {
			return nil, err
		}
	}
	for _, c := range runChunks {
		if cp.Runs, err = decodeChunk(chunks, c, checkpointRunsFormat, cp.Runs); err != nil {
			return nil, err
		}
	}
	return cp.state()
}

// itemCount is how many items the chunks say they hold, as a capacity to
// decode them into: at most a million, whatever a damaged index claims
// (decodeChunk checks each count against its chunk).
func itemCount(chunks []CheckpointChunk) int {
	n := 0
	for _, c := range chunks {
		n += max(c.Count, 0)
		if n >= 1<<20 {
			return 1 << 20
		}
	}
	return n
}

// unpage returns the chunks the pages name, in order, through depth more
// levels of pages of pages; an index written before pages gives its chunks
// (flat) itself.
func unpage(blobs map[content.Digest][]byte, pages []CheckpointChunk, depth int, flat []CheckpointChunk) ([]CheckpointChunk, error) {
	if len(pages) == 0 {
		return flat, nil
	}
	for range depth + 1 {
		var out []CheckpointChunk
		for _, pg := range pages {
			refs, err := decodeChunk[CheckpointChunk](blobs, pg, checkpointPageFormat, nil)
			if err != nil {
				return nil, err
			}
			out = append(out, refs...)
		}
		pages = out
	}
	return pages, nil
}

// decodeChunk appends a chunk's items to into. They are decoded in
// into's spare capacity, where there is room (encoding/json appends a
// JSON array's elements to the slice it decodes into), not decoded into
// a slice of their own and copied.
func decodeChunk[T any](chunks map[content.Digest][]byte, c CheckpointChunk, format string, into []T) ([]T, error) {
	data, ok := chunks[c.Ref]
	if !ok {
		return nil, &CheckpointError{"chunk " + c.Ref.String() + " is missing"}
	}
	if content.Sum(data) != c.Ref {
		return nil, &CheckpointError{"chunk " + c.Ref.String() + " does not match its digest"}
	}
	body := chunkBody[T]{Items: into[len(into):]}
	if err := json.Unmarshal(data, &body); err != nil {
		return nil, &CheckpointError{"chunk " + c.Ref.String() + " is not JSON: " + err.Error()}
	}
	if body.Format != format || len(body.Items) != c.Count {
		return nil, &CheckpointError{fmt.Sprintf("chunk %s holds %d items of format %q, want %d of %q", c.Ref, len(body.Items), body.Format, c.Count, format)}
	}
	if len(body.Items) > 0 && len(into) < cap(into) && &body.Items[0] == &into[:len(into)+1][len(into)] {
		return into[:len(into)+len(body.Items)], nil // decoded in place
	}
	return append(into, body.Items...), nil
}
