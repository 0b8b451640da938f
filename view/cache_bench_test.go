package view_test

import (
	"fmt"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/view"
)

// BenchmarkCacheReport reads the latest page (50 generations) of a session
// of 400 generations whose requests grow by two segments a turn (to 802
// segments), with two context events between generations.
func BenchmarkCacheReport(b *testing.B) {
	blobs := blob.NewMemory()
	log := store.NewMemory(blobs)
	var head int64
	add := func(kind string, payload any) {
		if _, err := log.Append(bg, "s1", head, []core.Proposal{core.NewProposal(0, nil, kind, payload)}); err != nil {
			b.Fatal(err)
		}
		head++
	}
	x, err := blob.PutRef(bg, blobs, []byte("x"), content.MediaText, "")
	if err != nil {
		b.Fatal(err)
	}
	add(core.KindSessionOpened, core.SessionOpened{SessionID: "s1"})
	segs := []core.CacheSegment{seg(core.SegmentTool, "search", `{"name":"search"}`), seg(core.SegmentInstructions, "", "be brief")}
	var list []byte
	for i := range 400 {
		for j := range 2 {
			id := fmt.Sprintf("m%d_%d", i, j)
			add(core.KindContextEntriesApplied, core.ContextEntriesApplied{Entries: []core.Entry{{ID: id, Kind: core.EntryMessage, Content: x}}})
			segs = append(segs, seg(core.EntryMessage, "", fmt.Sprintf("message %d %d with some text of a typical length", i, j), core.Entry{ID: id}))
		}
		if list, err = core.EncodeSegments(segs); err != nil {
			b.Fatal(err)
		}
		ref, err := blob.PutRef(bg, blobs, list, core.MediaRequestSegments, "")
		if err != nil {
			b.Fatal(err)
		}
		add(core.KindTurnGenerationCompleted, core.TurnGenerationCompleted{RunID: "r1", Turn: i + 1, Finish: "stop",
			Cache: &core.CacheFacts{Model: "m", RequestBytes: 1, SegmentBytes: core.SegmentTotal(segs), SegmentCount: len(segs), Segments: ref}})
	}
	b.ResetTimer()
	for range b.N {
		r, err := view.ReadCacheReport(bg, log, blobs, "s1", view.CacheQuery{})
		if err != nil || len(r.Turns) != 50 || *r.Turns[49].PrefixFraction != 1 {
			b.Fatalf("%d rows, %v", len(r.Turns), err)
		}
	}
	b.ReportMetric(float64(len(list)), "last-list-B")
}
