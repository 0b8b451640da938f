package core

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
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
// then changes the chunk it falls in, not every chunk after it.
const (
	chunkSpread = 32
	chunkMax    = 128
)

// checkpointIndex is the version 2 index: the state without its entries
// and runs, which are in the chunks it names, in order.
type checkpointIndex struct {
	checkpointHead
	EntryChunks []CheckpointChunk `json:"entryChunks"`
	RunChunks   []CheckpointChunk `json:"runChunks"`
}

// CheckpointChunk names one chunk of a chunked checkpoint and how many
// items it holds.
type CheckpointChunk struct {
	Ref   content.Digest `json:"ref"`
	Count int            `json:"count"`
}

// chunkBody is a chunk blob: entries or run records, in order.
type chunkBody[T any] struct {
	Format string `json:"format"`
	Items  []T    `json:"items"`
}

// CheckpointParts is a chunked checkpoint ready to store: the index, and
// the bytes of every chunk it names that the memo did not know (chunks it
// knew are stored already, by the checkpoint the memo came from).
type CheckpointParts struct {
	Index []byte
	// Chunks are the digests of every chunk the index names, in order.
	Chunks []content.Digest
	// New holds the bytes of the chunks to store, by digest.
	New map[content.Digest][]byte
	// Memo remembers this checkpoint's chunks, for the next one.
	Memo *CheckpointMemo
}

// CheckpointMemo remembers the chunks of a session's last stored
// checkpoint by the items they hold, so the next checkpoint does not encode
// them again. A chunk is remembered only when its items cannot change: any
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
	parts := CheckpointParts{New: map[content.Digest][]byte{}, Memo: &CheckpointMemo{chunks: map[string]content.Digest{}}}
	ix := checkpointIndex{checkpointHead: cp.checkpointHead, EntryChunks: []CheckpointChunk{}, RunChunks: []CheckpointChunk{}}
	ix.Version = CheckpointChunkedVersion
	// put encodes one chunk unless the memo knows it under key ("" for a
	// chunk that may still change), and records it in the index list.
	put := func(list *[]CheckpointChunk, key string, count int, v any) error {
		d, known := memo.lookup(key)
		if !known {
			data, err := content.MarshalCanonical(v)
			if err != nil {
				return err
			}
			d = content.Sum(data)
			parts.New[d] = data
		}
		if key != "" {
			parts.Memo.chunks[key] = d
		}
		*list = append(*list, CheckpointChunk{Ref: d, Count: count})
		parts.Chunks = append(parts.Chunks, d)
		return nil
	}
	for _, ch := range cutChunks(len(cp.Entries), func(i int) string { return cp.Entries[i].ID }) {
		es := cp.Entries[ch[0]:ch[1]]
		var key strings.Builder
		key.WriteString("e")
		for _, e := range es {
			key.WriteString(" " + e.ID)
		}
		if err := put(&ix.EntryChunks, key.String(), len(es), chunkBody[Entry]{Format: checkpointEntriesFormat, Items: es}); err != nil {
			return CheckpointParts{}, err
		}
	}
	for _, ch := range cutChunks(len(cp.Runs), func(i int) string { return cp.Runs[i].ID }) {
		rs := cp.Runs[ch[0]:ch[1]]
		key := runsChunkKey(rs)
		if err := put(&ix.RunChunks, key, len(rs), chunkBody[runState]{Format: checkpointRunsFormat, Items: rs}); err != nil {
			return CheckpointParts{}, err
		}
	}
	index, err := content.MarshalCanonical(ix)
	if err != nil {
		return CheckpointParts{}, err
	}
	parts.Index = index
	return parts, nil
}

// runsChunkKey is the memo key of a chunk of runs, "" when one of them has
// not ended (its record may still change).
func runsChunkKey(rs []runState) string {
	var key strings.Builder
	key.WriteString("r")
	for _, r := range rs {
		if r.Status != StatusCompleted && r.Status != StatusFailed && r.Status != StatusCancelled {
			return ""
		}
		key.WriteString(" " + r.ID + "/" + r.Status + "/" + strconv.FormatInt(r.EndedSeq, 10))
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
// content-defined boundaries.
func cutChunks(n int, id func(int) string) [][2]int {
	var out [][2]int
	from := 0
	for i := range n {
		h := fnv.New32a()
		h.Write([]byte(id(i)))
		if h.Sum32()%chunkSpread == 0 || i+1-from == chunkMax || i == n-1 {
			out = append(out, [2]int{from, i + 1})
			from = i + 1
		}
	}
	return out
}

// CheckpointChunkRefs returns the chunks a checkpoint blob needs, in order:
// none for a version 1 checkpoint, which holds everything itself.
func CheckpointChunkRefs(data []byte) ([]content.Digest, error) {
	ix, err := decodeIndex(data)
	if err != nil || ix == nil {
		return nil, err
	}
	var out []content.Digest
	for _, c := range ix.EntryChunks {
		out = append(out, c.Ref)
	}
	for _, c := range ix.RunChunks {
		out = append(out, c.Ref)
	}
	return out, nil
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
	for _, c := range ix.EntryChunks {
		items, err := decodeChunk[Entry](chunks, c, checkpointEntriesFormat)
		if err != nil {
			return nil, err
		}
		cp.Entries = append(cp.Entries, items...)
	}
	for _, c := range ix.RunChunks {
		items, err := decodeChunk[runState](chunks, c, checkpointRunsFormat)
		if err != nil {
			return nil, err
		}
		cp.Runs = append(cp.Runs, items...)
	}
	return cp.state()
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
