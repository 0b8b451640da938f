package core

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-agents/cairn/content"
)

// A chunked checkpoint (version 2) is what hosts store: a small index blob
// plus content-addressed chunk blobs holding the context entries and the
// run records. Entries never change under their id and an ended run never
// changes again, so the chunks of a long session are the same blobs from
// one checkpoint to the next: a new checkpoint encodes and stores its index
// and the chunks that changed, and shares the rest with the one before.
// The writer records edges from the index to its chunks, so the index
// holds them against collection.
const (
	CheckpointChunkedVersion = 2
	checkpointEntriesFormat  = "cairn.reducer-state.entries"
	checkpointRunsFormat     = "cairn.reducer-state.runs"
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

const checkpointPageFormat = "cairn.reducer-state.page"

// checkpointIndex is the version 2 index: the state without its entries
// and runs, which are in the chunks it names, in order.
type checkpointIndex struct {
	checkpointHead
	// EntryPages and RunPages name pages of chunks. An index written
	// before pages names its chunks itself (EntryChunks, RunChunks).
	EntryPages  []CheckpointChunk `json:"entryPages,omitempty"`
	RunPages    []CheckpointChunk `json:"runPages,omitempty"`
	EntryChunks []CheckpointChunk `json:"entryChunks,omitempty"`
	RunChunks   []CheckpointChunk `json:"runChunks,omitempty"`
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
// checkpoint by what they hold, so the next checkpoint does not encode them
// again. A chunk is remembered only when its items cannot change: any
// entry, and runs that have all ended. The zero value and nil remember
// nothing.
type CheckpointMemo struct {
	chunks map[string]content.Digest
}

// EncodeCheckpointParts returns the state as a chunked checkpoint, encoding
// only the chunks memo does not know. Its bytes are the same with or
// without a memo.
func EncodeCheckpointParts(s *State, memo *CheckpointMemo) (CheckpointParts, error) {
	cp := s.checkpoint()
	parts := CheckpointParts{Memo: &CheckpointMemo{chunks: map[string]content.Digest{}}}
	ix := checkpointIndex{checkpointHead: cp.checkpointHead}
	ix.Version = CheckpointChunkedVersion
	// put encodes one blob unless the memo knows it under key ("" for a
	// chunk that may still change), and returns its digest and whether it
	// is new.
	put := func(key string, v any) (content.Digest, bool, error) {
		d, known := memo.lookup(key)
		if !known {
			data, err := content.MarshalCanonical(v)
			if err != nil {
				return d, false, err
			}
			d = content.Sum(data)
			parts.New = append(parts.New, CheckpointBlob{Digest: d, Data: data})
		}
		if key != "" {
			parts.Memo.chunks[key] = d
		}
		return d, !known, nil
	}
	// paged groups a list's chunks into pages.
	paged := func(chunks []CheckpointChunk) ([]CheckpointChunk, error) {
		pages := []CheckpointChunk{}
		for _, pg := range cutChunks(len(chunks), func(i int) string { return chunks[i].Ref.String() }, pageSpread, pageMax) {
			refs := chunks[pg[0]:pg[1]]
			var key strings.Builder
			key.WriteString("p")
			kids := make([]content.Digest, len(refs))
			for i, c := range refs {
				key.WriteString(" ")
				key.WriteString(c.Ref.String())
				key.WriteString("/")
				key.WriteString(strconv.Itoa(c.Count))
				kids[i] = c.Ref
			}
			d, isNew, err := put(key.String(), chunkBody[CheckpointChunk]{Format: checkpointPageFormat, Items: refs})
			if err != nil {
				return nil, err
			}
			if isNew {
				parts.Edges = append(parts.Edges, CheckpointEdges{Parent: d, Children: kids})
			}
			pages = append(pages, CheckpointChunk{Ref: d, Count: len(refs)})
			parts.Named = append(parts.Named, d)
		}
		return pages, nil
	}
	var entryChunks, runChunks []CheckpointChunk
	for _, ch := range cutChunks(len(cp.Entries), func(i int) string { return cp.Entries[i].ID }, chunkSpread, chunkMax) {
		es := cp.Entries[ch[0]:ch[1]]
		var key strings.Builder
		key.WriteString("e")
		for i := range es {
			key.WriteString(" ")
			key.WriteString(es[i].ID)
		}
		d, _, err := put(key.String(), chunkBody[Entry]{Format: checkpointEntriesFormat, Items: es})
		if err != nil {
			return CheckpointParts{}, err
		}
		entryChunks = append(entryChunks, CheckpointChunk{Ref: d, Count: len(es)})
	}
	for _, ch := range cutChunks(len(cp.Runs), func(i int) string { return cp.Runs[i].ID }, chunkSpread, chunkMax) {
		rs := cp.Runs[ch[0]:ch[1]]
		d, _, err := put(runsChunkKey(rs), chunkBody[runState]{Format: checkpointRunsFormat, Items: rs})
		if err != nil {
			return CheckpointParts{}, err
		}
		runChunks = append(runChunks, CheckpointChunk{Ref: d, Count: len(rs)})
	}
	var err error
	if ix.EntryPages, err = paged(entryChunks); err != nil {
		return CheckpointParts{}, err
	}
	if ix.RunPages, err = paged(runChunks); err != nil {
		return CheckpointParts{}, err
	}
	if parts.Index, err = content.MarshalCanonical(ix); err != nil {
		return CheckpointParts{}, err
	}
	return parts, nil
}

// runsChunkKey is the memo key of a chunk of runs, "" when one of them has
// not ended (its record may still change).
func runsChunkKey(rs []runState) string {
	var key strings.Builder
	key.WriteString("r")
	for i := range rs {
		r := &rs[i]
		if r.Status != StatusCompleted && r.Status != StatusFailed && r.Status != StatusCancelled {
			return ""
		}
		key.WriteString(" ")
		key.WriteString(r.ID)
		key.WriteString("/")
		key.WriteString(r.Status)
		key.WriteString("/")
		key.WriteString(strconv.FormatInt(r.EndedSeq, 10))
	}
	return key.String()
}

func (m *CheckpointMemo) lookup(key string) (content.Digest, bool) {
	if m == nil || key == "" {
		return content.Digest{}, false
	}
	d, ok := m.chunks[key]
	return d, ok
}

// cutChunks splits n items, named by id(i), into [from, to) ranges at
// content-defined boundaries: after an item whose id hashes to a multiple
// of spread, or at max items.
func cutChunks(n int, id func(int) string, spread, max uint32) [][2]int {
	var out [][2]int
	from := 0
	for i := range n {
		if fnv32a(id(i))%spread == 0 || uint32(i+1-from) == max || i == n-1 {
			out = append(out, [2]int{from, i + 1})
			from = i + 1
		}
	}
	return out
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
// chunks they name. A reader fetches them until it needs none, then calls
// DecodeCheckpointParts.
func CheckpointNeeds(data []byte, have map[content.Digest][]byte) ([]content.Digest, error) {
	ix, err := decodeIndex(data)
	if err != nil || ix == nil {
		return nil, err
	}
	named, err := CheckpointChunkRefs(data)
	if err != nil {
		return nil, err
	}
	var need []content.Digest
	for _, d := range named {
		if _, ok := have[d]; !ok {
			need = append(need, d)
		}
	}
	if len(need) > 0 {
		return need, nil
	}
	for _, pg := range append(slices.Clone(ix.EntryPages), ix.RunPages...) {
		refs, err := decodeChunk[CheckpointChunk](have, pg, checkpointPageFormat)
		if err != nil {
			return nil, err
		}
		for _, c := range refs {
			if _, ok := have[c.Ref]; !ok {
				need = append(need, c.Ref)
			}
		}
	}
	return need, nil
}

// decodeIndex decodes a version 2 index; nil (and no error) for a blob of
// another version, which DecodeCheckpoint judges.
func decodeIndex(data []byte) (*checkpointIndex, error) {
	var head struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, &CheckpointError{"not JSON: " + err.Error()}
	}
	if head.Format != CheckpointFormat || head.Version != CheckpointChunkedVersion {
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
	entryChunks, err := unpage(chunks, ix.EntryPages, ix.EntryChunks)
	if err != nil {
		return nil, err
	}
	runChunks, err := unpage(chunks, ix.RunPages, ix.RunChunks)
	if err != nil {
		return nil, err
	}
	for _, c := range entryChunks {
		items, err := decodeChunk[Entry](chunks, c, checkpointEntriesFormat)
		if err != nil {
			return nil, err
		}
		cp.Entries = append(cp.Entries, items...)
	}
	for _, c := range runChunks {
		items, err := decodeChunk[runState](chunks, c, checkpointRunsFormat)
		if err != nil {
			return nil, err
		}
		cp.Runs = append(cp.Runs, items...)
	}
	return cp.state()
}

// unpage returns the chunks the pages name, in order; an index written
// before pages gives its chunks (flat) itself.
func unpage(blobs map[content.Digest][]byte, pages, flat []CheckpointChunk) ([]CheckpointChunk, error) {
	if len(pages) == 0 {
		return flat, nil
	}
	var out []CheckpointChunk
	for _, pg := range pages {
		refs, err := decodeChunk[CheckpointChunk](blobs, pg, checkpointPageFormat)
		if err != nil {
			return nil, err
		}
		out = append(out, refs...)
	}
	return out, nil
}

func decodeChunk[T any](chunks map[content.Digest][]byte, c CheckpointChunk, format string) ([]T, error) {
	data, ok := chunks[c.Ref]
	if !ok {
		return nil, &CheckpointError{"chunk " + c.Ref.String() + " is missing"}
	}
	if content.Sum(data) != c.Ref {
		return nil, &CheckpointError{"chunk " + c.Ref.String() + " does not match its digest"}
	}
	var body chunkBody[T]
	if err := json.Unmarshal(data, &body); err != nil {
		return nil, &CheckpointError{"chunk " + c.Ref.String() + " is not JSON: " + err.Error()}
	}
	if body.Format != format || len(body.Items) != c.Count {
		return nil, &CheckpointError{fmt.Sprintf("chunk %s holds %d items of format %q, want %d of %q", c.Ref, len(body.Items), body.Format, c.Count, format)}
	}
	return body.Items, nil
}
