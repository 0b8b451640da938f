package core_test

import (
	"encoding/json"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// An index whose lists run to more pages than it names itself names pages
// of pages (version 3): a new checkpoint then writes one page a level, and
// edges for those, instead of an index that names every page. A reader
// walks down a level a round, and gets the state back.
func TestCheckpoint_NestedPagesKeepTheIndexSmall(t *testing.T) {
	core.SetCheckpointTopMax(t, 2)
	h := newHarness(t, testConfig())
	chatTurns(h, 0, 2000)
	first, err := core.EncodeCheckpointParts(h.state(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ix struct {
		Version              int
		EntryPages, RunPages []json.RawMessage
		EntryDepth, RunDepth int
	}
	if err := json.Unmarshal(first.Index, &ix); err != nil {
		t.Fatal(err)
	}
	if ix.Version != core.CheckpointNestedVersion || ix.EntryDepth < 1 || len(ix.EntryPages) > 2 || len(ix.RunPages) > 2 {
		t.Fatalf("2,000 runs with at most 2 pages named a list: version %d, entry depth %d, %d entry and %d run pages named",
			ix.Version, ix.EntryDepth, len(ix.EntryPages), len(ix.RunPages))
	}
	if len(first.Named) != len(ix.EntryPages)+len(ix.RunPages) {
		t.Fatalf("Named holds %d refs; the index names %d", len(first.Named), len(ix.EntryPages)+len(ix.RunPages))
	}

	chatTurns(h, 2000, 2001)
	next, _ := memoCheckpoint(t, h.state(), first.Memo)
	// One more run changes the last chunk of each list and the last page
	// at each level above it: a handful of blobs, each page with its edges.
	levels := 2 + ix.EntryDepth + 1 + ix.RunDepth + 1
	if len(next.New) > levels+2 || len(next.Edges) > levels {
		t.Fatalf("one more run wrote %d blobs and %d pages' edges; want at most %d and %d", len(next.New), len(next.Edges), levels+2, levels)
	}

	stored := map[content.Digest][]byte{}
	for _, b := range append(first.New, next.New...) {
		stored[b.Digest] = b.Data
	}
	have := map[content.Digest][]byte{}
	rounds := 0
	for ; ; rounds++ {
		need, err := core.CheckpointNeeds(next.Index, have)
		if err != nil || rounds > 2+max(ix.EntryDepth, ix.RunDepth) {
			t.Fatalf("round %d: CheckpointNeeds = %d, %v", rounds, len(need), err)
		}
		if len(need) == 0 {
			break
		}
		for _, d := range need {
			data, ok := stored[d]
			if !ok {
				t.Fatalf("round %d: asked for %s, which no checkpoint stored", rounds, d)
			}
			have[d] = data
		}
	}
	if rounds < 3 {
		t.Fatalf("a nested index was read in %d rounds; want one a level", rounds)
	}
	got, err := core.DecodeCheckpointParts(next.Index, have)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustEncode(t, got), mustEncode(t, h.state()); string(a) != string(b) {
		t.Fatal("the nested checkpoint decodes to another state")
	}
	sum, err := core.CheckpointSummary(next.Index)
	if err != nil || sum.Head != h.state().Head {
		t.Fatalf("CheckpointSummary = %+v, %v", sum, err)
	}

	// An entry removed from the middle changes a chunk and the pages
	// above it at every level; the memo still gives the checkpoint that
	// none gives, and it still decodes to the state.
	h.mustAdmit(core.RemoveContext{AtMs: h.tick(), EntryIDs: []string{h.state().Context()[1500].ID}})
	edited, _ := memoCheckpoint(t, h.state(), next.Memo)
	for _, b := range edited.New {
		stored[b.Digest] = b.Data
	}
	got, err = core.DecodeCheckpointParts(edited.Index, stored)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustEncode(t, got), mustEncode(t, h.state()); string(a) != string(b) {
		t.Fatal("the nested checkpoint after an edit decodes to another state")
	}
}
