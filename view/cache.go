package view

import (
	"context"
	"fmt"
	"slices"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// The prompt-cache report answers "how much of each request was reused from
// the previous one, and what broke the prefix when it broke". It pages a
// session's generations newest first, like the transcript, reading only a
// bounded event range backward from the page's end: the generations'
// turn.generation_completed events, the context and config events between
// them, and each generation's stored segment list (core.CacheFacts). It
// never replays the log and never rebuilds a request.
//
// For each generation with request facts (a row), and the previous such
// generation of the session (any run):
//
//   - prefixBytes is the bytes of the leading segments the request repeats
//     unchanged from the previous request: same digest at the same
//     position, in the order providers match (tools, instructions, then
//     each message, block or item);
//   - prefixFraction is prefixBytes / the previous request's segment bytes
//     (its request without framing such as the model name, parameters and
//     JSON punctuation): 1.0 when the whole previous request is repeated.
//     It is absent on the session's first generation, which has nothing to
//     repeat, and 0 when the model, provider or API kind changed, since no
//     provider cache carries over to another model;
//   - brokenBy, when prefixFraction < 1, names the first segment that
//     differs (its index and kind: the current request's segment there, or
//     the previous request's when that one is gone, see BrokenSegment) and,
//     when one is found, the event that changed it.
//
// The broken-by rule. Candidates are the context and config events strictly
// between the two generations: context.entries_applied,
// context.entries_removed, context.keys_removed, context.compacted and
// session.config_changed. An event touches a segment of either request when
// it adds, removes or replaces one of the segment's entries (by entry id,
// or by key for keyed entries: a keyed append replaces the active entry with
// its key, and a catalog append may trim old versions of its key), or, for
// session.config_changed, when the segment is a tool and a different tool
// (or none) is at that position in the other request. Only segments at or
// after the first difference and within the previous request's length count:
// appends after the previous request are growth, not breakage. The event
// whose touched segment is nearest the first difference wins, the latest
// one on a tie. No event is named when none touches those segments (a tool
// definition or the adapter's lowering changed, say); a model change names
// the latest session.config_changed between the two, if any.
//
// Generations without request facts (recorded before the facts existed, or
// failed before a request was built) are not rows, and the previous
// generation is the previous one with facts.

// Cache report page bounds (in generations).
const (
	DefaultCacheLimit = 50
	MaxCacheLimit     = 500
)

// cacheScanChunk is how many events one backward read asks for.
const cacheScanChunk = 256

// CacheQuery selects a page: the latest generations, or with Before (> 0)
// those before that seq (the cursor of a later page). Limit is 0
// (DefaultCacheLimit) to MaxCacheLimit generations.
type CacheQuery struct {
	Before int64
	Limit  int
}

// CacheReport is one page of generations in chronological order.
type CacheReport struct {
	Turns []CacheTurn `json:"turns"`
	// Cursor, when set, is Before for the next earlier page.
	Cursor int64 `json:"cursor,omitempty"`
}

// CacheTurn is one generation's row.
type CacheTurn struct {
	RunID string `json:"runId"`
	Turn  int    `json:"turn"`
	// Seq is the generation's turn.generation_completed event.
	Seq   int64  `json:"seq"`
	Model string `json:"model"`
	// RequestBytes is the request body's size; SegmentBytes the part of it
	// in segments (Segments of them).
	RequestBytes int64 `json:"requestBytes"`
	SegmentBytes int64 `json:"segmentBytes"`
	Segments     int   `json:"segments"`
	// PrefixBytes and PrefixSegments are what the request repeats from the
	// previous one; PrefixFraction is PrefixBytes over PreviousBytes (the
	// previous request's segment bytes). All three are absent or 0 on the
	// session's first generation (PreviousSeq 0).
	PrefixBytes    int64    `json:"prefixBytes"`
	PrefixSegments int      `json:"prefixSegments"`
	PrefixFraction *float64 `json:"prefixFraction,omitempty"`
	PreviousSeq    int64    `json:"previousSeq,omitempty"`
	PreviousBytes  int64    `json:"previousBytes,omitempty"`
	// The provider's own figures, present when it reported usage.
	InputTokens              int64     `json:"inputTokens,omitempty"`
	ProviderCachedTokens     *int64    `json:"providerCachedTokens,omitempty"`
	ProviderCacheWriteTokens int64     `json:"providerCacheWriteTokens,omitempty"`
	BrokenBy                 *BrokenBy `json:"brokenBy,omitempty"`
}

// BrokenBy names where a prefix broke and, when found, the event that broke
// it (Seq and Kind absent when no event in the log explains it).
type BrokenBy struct {
	Seq     int64         `json:"seq,omitempty"`
	Kind    string        `json:"kind,omitempty"`
	Segment BrokenSegment `json:"segment"`
}

// BrokenSegment is the first segment that differs: its index (the same
// in both requests), its kind (core.SegmentTool, core.SegmentInstructions,
// an entry kind, or "model" when the model changed), the tool or model it
// names, and the key of its entry when keyed. It describes the current
// request's segment at that index, or, with Previous, the previous
// request's, when that one is gone from the current request (its entries
// were removed or replaced, its tool dropped, or the request is shorter).
type BrokenSegment struct {
	Index    int    `json:"index"`
	Kind     string `json:"kind"`
	Ref      string `json:"ref,omitempty"`
	Key      string `json:"key,omitempty"`
	Previous bool   `json:"previous,omitempty"`
}

// SegmentModel is BrokenSegment.Kind when the model, provider or API kind
// changed between the two generations.
const SegmentModel = "model"

// cacheGen is a generation with request facts, as read.
type cacheGen struct {
	seq   int64
	p     core.TurnGenerationCompleted
	facts core.CacheFacts
	list  runtime.SegmentList
}

// ReadCacheReport reads one page of a session's prompt-cache report. An
// unknown session is store.ErrSessionNotFound; an invalid query a
// *QueryError.
func ReadCacheReport(ctx context.Context, log store.SessionLog, blobs BlobReader, sessionID string, q CacheQuery) (CacheReport, error) {
	if q.Limit < 0 || q.Limit > MaxCacheLimit {
		return CacheReport{}, &QueryError{fmt.Sprintf("limit must be 0 to %d (0: %d)", MaxCacheLimit, DefaultCacheLimit)}
	}
	if q.Before < 0 {
		return CacheReport{}, &QueryError{"before must not be negative"}
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultCacheLimit
	}
	lc, err := log.Session(ctx, sessionID)
	if err != nil {
		return CacheReport{}, err
	}
	before := lc.Head + 1
	if q.Before > 0 {
		before = min(q.Before, before)
	}

	// Read backward until limit+1 generations with facts (the page and the
	// one before it) or the start of the log. gens and changes are newest
	// first while reading.
	var gens []cacheGen
	var changes []core.Event
	for cursor := before; cursor > 1 && len(gens) <= limit; {
		evs, err := log.ReadBefore(ctx, sessionID, cursor, cacheScanChunk)
		if err != nil {
			return CacheReport{}, err
		}
		if len(evs) == 0 {
			break
		}
		for i := len(evs) - 1; i >= 0 && len(gens) <= limit; i-- {
			ev := evs[i]
			if ev.Version != core.EventVersion {
				continue
			}
			switch ev.Kind {
			case core.KindTurnGenerationCompleted:
				p, err := decode[core.TurnGenerationCompleted](ev)
				if err != nil {
					return CacheReport{}, fmt.Errorf("cache report of %s, seq %d: %w", sessionID, ev.Seq, err)
				}
				if p.Cache != nil {
					gens = append(gens, cacheGen{seq: ev.Seq, p: p, facts: *p.Cache})
				}
			case core.KindContextEntriesApplied, core.KindContextEntriesRemoved, core.KindContextKeysRemoved,
				core.KindContextCompacted, core.KindSessionConfigChanged:
				changes = append(changes, ev)
			}
		}
		cursor = evs[0].Seq
	}
	slices.Reverse(gens)
	slices.Reverse(changes)

	var report CacheReport
	first := 0 // index in gens of the page's first row
	if len(gens) > limit {
		first = len(gens) - limit
		report.Cursor = gens[first].seq
	}
	// A request's list is mostly stored as a delta on the one before, so
	// the lists read for this page are kept to read the next ones from.
	read := map[content.Digest]runtime.SegmentList{}
	for i := range gens {
		l, err := runtime.ReadSegments(ctx, blobs, gens[i].facts.Segments, read)
		if err != nil {
			return CacheReport{}, fmt.Errorf("cache report of %s, seq %d: %w", sessionID, gens[i].seq, err)
		}
		gens[i].list = l
	}
	report.Turns = make([]CacheTurn, 0, len(gens)-first)
	for i := first; i < len(gens); i++ {
		var prev *cacheGen
		if i > 0 {
			prev = &gens[i-1]
		}
		row, err := cacheRow(prev, &gens[i], changes)
		if err != nil {
			return CacheReport{}, fmt.Errorf("cache report of %s, seq %d: %w", sessionID, gens[i].seq, err)
		}
		report.Turns = append(report.Turns, row)
	}
	return report, nil
}

func cacheRow(prev, cur *cacheGen, changes []core.Event) (CacheTurn, error) {
	f := cur.facts
	row := CacheTurn{RunID: cur.p.RunID, Turn: cur.p.Turn, Seq: cur.seq, Model: f.Model,
		RequestBytes: f.RequestBytes, SegmentBytes: f.SegmentBytes, Segments: f.SegmentCount}
	if u := cur.p.Usage; u.InputTokens > 0 || u.CachedInputTokens > 0 || u.CacheWriteTokens > 0 {
		cached := u.CachedInputTokens
		row.InputTokens, row.ProviderCachedTokens, row.ProviderCacheWriteTokens = u.InputTokens, &cached, u.CacheWriteTokens
	}
	if prev == nil {
		return row, nil
	}
	row.PreviousSeq, row.PreviousBytes = prev.seq, prev.list.Bytes
	between := changesBetween(changes, prev.seq, cur.seq)
	pf := prev.facts
	if pf.Model != f.Model || pf.ProviderID != f.ProviderID || pf.APIKind != f.APIKind {
		zero := 0.0
		row.PrefixFraction = &zero
		row.BrokenBy = &BrokenBy{Segment: BrokenSegment{Kind: SegmentModel, Ref: f.Model}}
		for _, ev := range between {
			if ev.Kind == core.KindSessionConfigChanged {
				row.BrokenBy.Seq, row.BrokenBy.Kind = ev.Seq, ev.Kind
			}
		}
		return row, nil
	}
	n, size := sharedPrefix(prev, cur)
	row.PrefixSegments, row.PrefixBytes = n, size
	fraction := 1.0
	if row.PreviousBytes > 0 {
		fraction = float64(size) / float64(row.PreviousBytes)
	}
	row.PrefixFraction = &fraction
	prevSegs, curSegs := prev.list.Segments, cur.list.Segments
	if n >= len(prevSegs) {
		return row, nil
	}
	seg, gone := curSegs, n >= len(curSegs) || removed(prevSegs[n], curSegs, n)
	if gone {
		seg = prevSegs
	}
	row.BrokenBy = &BrokenBy{Segment: BrokenSegment{Index: n, Kind: seg[n].Kind, Ref: seg[n].Ref, Previous: gone}}
	if len(seg[n].Keys) > 0 {
		row.BrokenBy.Segment.Key = seg[n].Keys[0]
	}
	best := -1
	for _, ev := range between {
		at, err := touches(ev, prevSegs, curSegs, n)
		if err != nil {
			return CacheTurn{}, err
		}
		if at >= 0 && (best < 0 || at <= best) { // nearest; the later event on a tie
			best = at
			row.BrokenBy.Seq, row.BrokenBy.Kind = ev.Seq, ev.Kind
		}
	}
	return row, nil
}

// sharedPrefix is core.SharedPrefix of prev's and cur's lists, in what the
// lists add to each other: a list stored as a delta on prev's begins with
// the Keep segments it kept, and two lists in one array (core.SharedSlice)
// with all the segments the shorter holds. A session's report compares
// each request with the one before, and the context only grows: comparing
// every segment again made a row cost the whole session.
func sharedPrefix(prev, cur *cacheGen) (int, int64) {
	p, c := prev.list.Segments, cur.list.Segments
	n := 0
	switch {
	case cur.list.Keep > 0 && cur.list.Base == prev.facts.Segments.Digest:
		n = cur.list.Keep
	case len(p) > 0 && len(c) > 0 && &p[0] == &c[0]:
		n = min(len(p), len(c))
	}
	more, size := core.SharedPrefix(p[n:], c[n:])
	return n + more, size + prev.list.Bytes - core.SegmentTotal(p[n:])
}

// changesBetween returns the changes with after < seq < before.
func changesBetween(changes []core.Event, after, before int64) []core.Event {
	lo, _ := slices.BinarySearchFunc(changes, after+1, func(ev core.Event, seq int64) int { return cmpSeq(ev.Seq, seq) })
	hi, _ := slices.BinarySearchFunc(changes, before, func(ev core.Event, seq int64) int { return cmpSeq(ev.Seq, seq) })
	return changes[lo:hi]
}

func cmpSeq(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// touches returns the lowest index i in [from, len(prev)) at which ev
// touches prev[i] or cur[i], or -1 (see the broken-by rule above).
func touches(ev core.Event, prev, cur []core.CacheSegment, from int) (int, error) {
	var ids, keys []string
	config := false
	switch ev.Kind {
	case core.KindContextEntriesApplied:
		p, err := decode[core.ContextEntriesApplied](ev)
		if err != nil {
			return -1, err
		}
		for _, e := range p.Entries {
			ids = append(ids, e.ID)
			if e.Key != "" {
				keys = append(keys, e.Key)
			}
		}
	case core.KindContextEntriesRemoved:
		p, err := decode[core.ContextEntriesRemoved](ev)
		if err != nil {
			return -1, err
		}
		ids = p.EntryIDs
	case core.KindContextKeysRemoved:
		p, err := decode[core.ContextKeysRemoved](ev)
		if err != nil {
			return -1, err
		}
		keys = p.Keys
	case core.KindContextCompacted:
		p, err := decode[core.ContextCompacted](ev)
		if err != nil {
			return -1, err
		}
		ids = p.Removed
		for _, e := range p.Entries {
			ids = append(ids, e.ID)
		}
	case core.KindSessionConfigChanged:
		config = true
	default:
		return -1, nil
	}
	hit := func(s core.CacheSegment) bool {
		for _, id := range s.Entries {
			if slices.Contains(ids, id) {
				return true
			}
		}
		for _, k := range s.Keys {
			if slices.Contains(keys, k) {
				return true
			}
		}
		return false
	}
	for i := from; i < len(prev); i++ {
		var c *core.CacheSegment
		if i < len(cur) {
			c = &cur[i]
		}
		if config {
			if toolMoved(prev[i], c) {
				return i, nil
			}
			continue
		}
		if hit(prev[i]) || (c != nil && hit(*c)) {
			return i, nil
		}
	}
	return -1, nil
}

// removed reports whether the previous request's segment p, at index n, is
// gone from cur: none of its entries (or, for a tool, no tool of its name)
// is in cur, and cur[n] is not its keyed replacement.
func removed(p core.CacheSegment, cur []core.CacheSegment, n int) bool {
	if slices.ContainsFunc(p.Keys, func(k string) bool { return slices.Contains(cur[n].Keys, k) }) {
		return false
	}
	if p.Kind == core.SegmentTool {
		return !slices.ContainsFunc(cur, func(c core.CacheSegment) bool { return c.Kind == core.SegmentTool && c.Ref == p.Ref })
	}
	if len(p.Entries) == 0 {
		return false
	}
	for _, c := range cur {
		for _, id := range c.Entries {
			if slices.Contains(p.Entries, id) {
				return false
			}
		}
	}
	return true
}

// toolMoved: one of the two segments at a position is a tool, and the
// other is not the same tool.
func toolMoved(p core.CacheSegment, c *core.CacheSegment) bool {
	if c == nil {
		return p.Kind == core.SegmentTool
	}
	if p.Kind != core.SegmentTool && c.Kind != core.SegmentTool {
		return false
	}
	return p.Kind != c.Kind || p.Ref != c.Ref
}
