package view_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/view"
)

// seg is a segment lowered from body and entries.
func seg(kind, ref, body string, entries ...core.Entry) core.CacheSegment {
	return core.NewCacheSegment(kind, ref, []byte(body), entries)
}

// gen appends a generation whose request had segs (nil: no facts).
func (l *tlog) gen(runID string, turn int, model string, segs []core.CacheSegment, usage core.Usage) int64 {
	l.t.Helper()
	p := core.TurnGenerationCompleted{RunID: runID, Turn: turn, Finish: "stop", Usage: usage}
	if segs != nil {
		list, err := core.EncodeSegments(segs)
		if err != nil {
			l.t.Fatal(err)
		}
		p.Cache = &core.CacheFacts{ProviderID: "p", APIKind: core.APIChatCompletions, Model: model,
			RequestBytes: core.SegmentTotal(segs) + 40, SegmentBytes: core.SegmentTotal(segs), SegmentCount: len(segs),
			Segments: l.put(string(list), core.MediaRequestSegments, "")}
	}
	return l.add(core.KindTurnGenerationCompleted, p)
}

func report(t *testing.T, l *tlog, q view.CacheQuery) view.CacheReport {
	t.Helper()
	r, err := view.ReadCacheReport(bg, l.log, l.blobs, l.id, q)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCacheReport_PagesBackwardAndComparesAcrossPages(t *testing.T) {
	l := newTLog(t)
	tool := seg(core.SegmentTool, "search", `{"name":"search"}`)
	segs := []core.CacheSegment{tool, seg(core.SegmentInstructions, "", "be brief")}
	var seqs []int64
	for i := range 5 {
		l.userMessage("filler") // events the report passes over
		segs = append(segs, seg(core.EntryMessage, "", "message "+string(rune('a'+i))))
		seqs = append(seqs, l.gen("r1", i+1, "m", append([]core.CacheSegment(nil), segs...), core.Usage{InputTokens: 100, CachedInputTokens: int64(10 * i)}))
		if i == 2 {
			l.gen("r1", 9, "m", nil, core.Usage{}) // no facts: not a row
		}
	}

	latest := report(t, l, view.CacheQuery{Limit: 2})
	if len(latest.Turns) != 2 || latest.Turns[0].Seq != seqs[3] || latest.Turns[1].Seq != seqs[4] || latest.Cursor != seqs[3] {
		t.Fatalf("latest page %+v", latest)
	}
	// The page's first row compares with the generation before the page.
	first := latest.Turns[0]
	if first.PreviousSeq != seqs[2] || first.PrefixFraction == nil || *first.PrefixFraction != 1 || first.PrefixSegments != 5 ||
		first.Segments != 6 || first.PrefixBytes != first.PreviousBytes || *first.ProviderCachedTokens != 30 || first.InputTokens != 100 {
		t.Fatalf("first row of the latest page %+v", first)
	}
	older := report(t, l, view.CacheQuery{Before: latest.Cursor, Limit: 2})
	if len(older.Turns) != 2 || older.Turns[0].Seq != seqs[1] || older.Turns[1].Seq != seqs[2] || older.Cursor != seqs[1] {
		t.Fatalf("older page %+v", older)
	}
	oldest := report(t, l, view.CacheQuery{Before: older.Cursor, Limit: 2})
	if len(oldest.Turns) != 1 || oldest.Turns[0].Seq != seqs[0] || oldest.Cursor != 0 {
		t.Fatalf("oldest page %+v", oldest)
	}
	if r := oldest.Turns[0]; r.PrefixFraction != nil || r.PreviousSeq != 0 || r.PrefixBytes != 0 || r.BrokenBy != nil {
		t.Fatalf("the first generation %+v", r)
	}
	if all := report(t, l, view.CacheQuery{}); len(all.Turns) != 5 || all.Cursor != 0 {
		t.Fatalf("default page: %d rows, cursor %d", len(all.Turns), all.Cursor)
	}
}

func TestCacheReport_NamesWhatBrokeThePrefix(t *testing.T) {
	tool := seg(core.SegmentTool, "search", `{"name":"search"}`)
	instr := core.Entry{ID: "i1", Key: "instructions.main", Kind: core.EntryInstructions}
	catalog := core.Entry{ID: "c1", Key: core.SkillCatalogKey, Kind: core.EntryCatalog}
	u1, a1, u2 := core.Entry{ID: "u1", Kind: core.EntryMessage}, core.Entry{ID: "a1", Kind: core.EntryMessage}, core.Entry{ID: "u2", Kind: core.EntryMessage}
	prev := []core.CacheSegment{tool, seg(core.SegmentInstructions, "", "be brief", instr), seg(core.EntryCatalog, "", "skills v1", catalog),
		seg(core.EntryMessage, "", "hi", u1), seg(core.EntryMessage, "", "hello", a1), seg(core.EntryMessage, "", "q", u2)}
	without := func(i int) []core.CacheSegment {
		return append(append([]core.CacheSegment(nil), prev[:i]...), prev[i+1:]...)
	}
	tail := seg(core.EntryMessage, "", "next question", core.Entry{ID: "u9"})
	// Entries in event payloads need content; every case stores these bytes.
	x := content.Ref([]byte("x"), content.MediaText, "")
	msg := func(id string) core.Entry { return core.Entry{ID: id, Kind: core.EntryMessage, Content: x} }
	config := core.SessionConfigChanged{Config: core.SessionConfig{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"}}}

	type change struct {
		kind    string
		payload any
		culprit bool // the event the report must name
	}
	for _, c := range []struct {
		name    string
		model   string
		cur     []core.CacheSegment
		changes []change
		want    view.BrokenSegment
		noEvent bool
	}{
		{
			name: "compaction",
			cur:  []core.CacheSegment{tool, prev[1], prev[2], seg(core.EntrySummary, "", "we said hi", core.Entry{ID: "s1"}), prev[5], tail},
			changes: []change{
				{core.KindContextCompacted, core.ContextCompacted{Trigger: core.TriggerManual, Removed: []string{"u1", "a1"}, Entries: []core.Entry{{ID: "s1", Kind: core.EntrySummary, Content: x}}}, true},
				{core.KindContextEntriesApplied, core.ContextEntriesApplied{Entries: []core.Entry{msg("u9")}}, false},
			},
			want: view.BrokenSegment{Index: 3, Kind: core.EntryMessage, Previous: true}, // u1, compacted away
		},
		{
			name: "removed key",
			cur:  append(without(2), tail),
			changes: []change{
				{core.KindContextKeysRemoved, core.ContextKeysRemoved{Keys: []string{core.SkillCatalogKey}}, true},
				{core.KindSessionConfigChanged, config, false}, // later, but changes no tool
			},
			want: view.BrokenSegment{Index: 2, Kind: core.EntryCatalog, Key: core.SkillCatalogKey, Previous: true},
		},
		{
			name: "removed entry",
			cur:  append(without(4), tail),
			changes: []change{
				{core.KindContextEntriesRemoved, core.ContextEntriesRemoved{EntryIDs: []string{"a1"}}, true},
				{core.KindContextEntriesApplied, core.ContextEntriesApplied{Entries: []core.Entry{msg("u9")}}, false},
			},
			want: view.BrokenSegment{Index: 4, Kind: core.EntryMessage, Previous: true},
		},
		{
			name: "tool added",
			cur:  append([]core.CacheSegment{tool, seg(core.SegmentTool, "shell", `{"name":"shell"}`)}, prev[1:]...),
			changes: []change{
				{core.KindSessionConfigChanged, config, true},
				{core.KindContextEntriesApplied, core.ContextEntriesApplied{Entries: []core.Entry{msg("u9")}}, false},
			},
			want: view.BrokenSegment{Index: 1, Kind: core.SegmentTool, Ref: "shell"},
		},
		{
			name:    "tool definition changed outside the log",
			cur:     append([]core.CacheSegment{seg(core.SegmentTool, "search", `{"name":"search","description":"new"}`)}, prev[1:]...),
			changes: []change{{core.KindSessionConfigChanged, config, false}},
			want:    view.BrokenSegment{Index: 0, Kind: core.SegmentTool, Ref: "search"},
			noEvent: true,
		},
		{
			name: "instructions replaced",
			cur: append([]core.CacheSegment{tool, seg(core.SegmentInstructions, "", "be kind", core.Entry{ID: "i2", Key: "instructions.main"})},
				append(append([]core.CacheSegment(nil), prev[2:]...), tail)...),
			changes: []change{
				{core.KindContextEntriesApplied, core.ContextEntriesApplied{Entries: []core.Entry{{ID: "i2", Key: "instructions.main", Kind: core.EntryInstructions, Content: x}}}, true},
				{core.KindContextEntriesApplied, core.ContextEntriesApplied{Entries: []core.Entry{msg("u9")}}, false},
			},
			want: view.BrokenSegment{Index: 1, Kind: core.SegmentInstructions, Key: "instructions.main"},
		},
		{
			name:    "tool dropped",
			cur:     append(append([]core.CacheSegment(nil), prev[1:]...), tail),
			changes: []change{{core.KindSessionConfigChanged, config, true}},
			want:    view.BrokenSegment{Index: 0, Kind: core.SegmentTool, Ref: "search", Previous: true},
		},
		{
			name:    "model changed",
			model:   "m2",
			cur:     append(append([]core.CacheSegment(nil), prev...), tail),
			changes: []change{{core.KindSessionConfigChanged, config, true}},
			want:    view.BrokenSegment{Kind: view.SegmentModel, Ref: "m2"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newTLog(t)
			l.put("x", content.MediaText, "")
			l.gen("r1", 1, "m", prev, core.Usage{})
			var culprit int64
			for _, ch := range c.changes {
				if seq := l.add(ch.kind, ch.payload); ch.culprit {
					culprit = seq
				}
			}
			model := c.model
			if model == "" {
				model = "m"
			}
			l.gen("r2", 1, model, c.cur, core.Usage{})
			r := report(t, l, view.CacheQuery{})
			row := r.Turns[1]
			want := view.BrokenBy{Segment: c.want}
			if !c.noEvent {
				want.Seq = culprit
				for _, ch := range c.changes {
					if ch.culprit {
						want.Kind = ch.kind
					}
				}
			}
			if row.BrokenBy == nil || *row.BrokenBy != want {
				t.Fatalf("brokenBy %+v, want %+v", row.BrokenBy, want)
			}
			shared := core.SegmentTotal(prev[:c.want.Index])
			if c.model != "" {
				shared = 0
			}
			if row.PrefixBytes != shared || row.PrefixFraction == nil || *row.PrefixFraction != float64(shared)/float64(core.SegmentTotal(prev)) {
				t.Fatalf("prefix %d bytes (%v), want %d of %d", row.PrefixBytes, row.PrefixFraction, shared, core.SegmentTotal(prev))
			}
		})
	}
}

func TestCacheReport_RejectsBadQueriesAndUnknownSessions(t *testing.T) {
	l := newTLog(t)
	for _, q := range []view.CacheQuery{{Limit: -1}, {Limit: view.MaxCacheLimit + 1}, {Before: -1}} {
		var qe *view.QueryError
		if _, err := view.ReadCacheReport(bg, l.log, l.blobs, l.id, q); !errors.As(err, &qe) {
			t.Fatalf("%+v: %v", q, err)
		}
	}
	if _, err := view.ReadCacheReport(bg, l.log, l.blobs, "nope", view.CacheQuery{}); !errors.Is(err, store.ErrSessionNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
	if r := report(t, l, view.CacheQuery{}); len(r.Turns) != 0 || r.Turns == nil {
		t.Fatalf("a session without generations: %+v", r)
	}
	// A segment list that cannot be read is an error, not a silent row.
	l.gen("r1", 1, "m", []core.CacheSegment{seg(core.EntryMessage, "", "hi")}, core.Usage{})
	if _, err := view.ReadCacheReport(bg, l.log, noBlobs{}, l.id, view.CacheQuery{}); err == nil {
		t.Fatal("a report over an unreadable segment list succeeded")
	}
}

type noBlobs struct{}

func (noBlobs) Get(context.Context, content.Digest) ([]byte, error) {
	return nil, errors.New("blob store unavailable")
}

// A session whose lists are stored as deltas (as the executor stores them)
// reports, row for row, what the same lists stored whole report: deltas
// that keep all of the list before, that keep less (a moved marker, an
// edit), and a list stored whole again in between.
func TestCacheReport_DeltaListsReportAsWholeLists(t *testing.T) {
	whole, deltas := newTLog(t), newTLog(t)
	segs := []core.CacheSegment{seg(core.SegmentTool, "search", `{"name":"search"}`), seg(core.SegmentInstructions, "", "be brief")}
	var last content.ContentRef // deltas' last list
	for i := range 40 {
		next := slices.Clone(segs)
		switch {
		case i%7 == 3: // the last segment changes, as a moved cache marker changes it
			next[len(next)-1] = seg(core.EntryMessage, "", fmt.Sprintf("message %d, marked", i-1))
		case i%11 == 5: // an edit in the middle
			next[len(next)/2] = seg(core.EntryMessage, "", fmt.Sprintf("edited at %d", i))
		}
		next = append(next, seg(core.EntryMessage, "", fmt.Sprintf("message %d", i)), seg(core.EntryMessage, "", fmt.Sprintf("answer %d", i)))
		whole.gen("r1", i+1, "m", next, core.Usage{InputTokens: 10})

		ref := deltas.put(string(must(core.EncodeSegments(next))), core.MediaRequestSegments, "")
		if keep := core.SegmentsPrefix(segs, next); i > 0 && i%13 != 0 && keep > 0 {
			d := core.SegmentDelta{Base: last, Keep: keep, Segments: next[keep:]}
			ref = deltas.put(string(must(core.EncodeSegmentDelta(d))), core.MediaRequestSegmentDelta, "")
		}
		deltas.add(core.KindTurnGenerationCompleted, core.TurnGenerationCompleted{RunID: "r1", Turn: i + 1, Finish: "stop", Usage: core.Usage{InputTokens: 10},
			Cache: &core.CacheFacts{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m", RequestBytes: core.SegmentTotal(next) + 40,
				SegmentBytes: core.SegmentTotal(next), SegmentCount: len(next), Segments: ref}})
		segs, last = next, ref
	}
	for _, q := range []view.CacheQuery{{}, {Limit: 7}, {Limit: 500}} {
		want, got := report(t, whole, q), report(t, deltas, q)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("limit %d: the report of delta lists differs from the whole lists':\n%+v\nwant\n%+v", q.Limit, got, want)
		}
		for p := got; p.Cursor != 0; {
			q.Before = p.Cursor
			want, p = report(t, whole, q), report(t, deltas, q)
			if !reflect.DeepEqual(p, want) {
				t.Fatalf("limit %d, before %d: the report of delta lists differs from the whole lists'", q.Limit, q.Before)
			}
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
