package provider

import (
	"unsafe"
	"weak"

	"github.com/cairn-agents/cairn/core"
)

// A session's next request repeats its previous one and adds entries at
// the end. Looking every entry's piece up again costs a key and a map
// probe per entry, which at 20,000 entries was half a turn's CPU. So an
// adapter leaves, with its pieces, the prefix it lowered: the ids of the
// entries before a point where its lowering holds no state (a restart
// point), and the pieces lowered from them. The next request whose
// entries start with those ids takes the pieces and lowers from that
// point on; any other request is lowered whole.

// loweredPrefix is one request's prefix, kept for the session's next.
// Each is the last one extended (in place when it can: core.SharedSlice),
// so keeping it costs what the request added.
type loweredPrefix struct {
	ids core.SharedSlice[string]
	// first is the entry of ids[0] in the request the prefix was kept
	// from, whose first len(ids) entries have those ids. Weak: a kept
	// prefix must not hold a session's entries in memory once the session
	// lets them go (the pieces' bound does not count them).
	first  weak.Pointer[core.Entry]
	pieces core.SharedSlice[*Piece]
	// members are the pieces' bytes joined by commas, as the members of a
	// JSON array: the next request sends them as one part, copied from
	// one place instead of from thousands.
	members core.SharedSlice[byte]
	// segs are the request's whole segment list, the lead segments first
	// (Kept.Segments): the next request's list extends it.
	segs core.SharedSlice[Segment]
	lead int
	size int64
	// state is what an adapter that keeps no pieces per entry kept instead
	// (KeepPrefixState): its lowering's state after the prefix, and the
	// bytes of size that are its.
	state      any
	stateBytes int64
}

// Kept is what a request takes from the last one's prefix (the zero Kept:
// nothing).
type Kept struct {
	// Pieces were lowered from the request's first Entries entries.
	// Callers must not modify them.
	Pieces  []*Piece
	Entries int
	// State is the adapter's state after the prefix, when it kept one
	// (KeepPrefixState) instead of pieces. Callers must not modify it.
	State any
	from  *loweredPrefix
}

// Members are the pieces' bytes joined by commas, as JSON array members.
func (k Kept) Members() []byte {
	if k.from == nil {
		return nil
	}
	return k.from.members.Items()
}

// Prefix returns the pieces of the entries before the restart point that
// the last request lowered under this scope left, when entries start with
// that request's entries up to it. A request whose entries are where the
// last one's were (a State's, which grow in place and are copied before
// any changes: see Request.Entries) starts with them: only the last of
// them is looked at, not the thousands before it.
func (s *PieceScope) Prefix(entries []core.Entry) Kept {
	if s == nil {
		return Kept{}
	}
	v, _ := s.pieces.Get(s.prefixKey())
	p, ok := v.(*loweredPrefix)
	if !ok {
		return Kept{}
	}
	ids := p.ids.Items()
	if len(ids) > len(entries) {
		return Kept{}
	}
	if n := len(ids); n == 0 || &entries[0] != p.first.Value() || entries[n-1].ID != ids[n-1] {
		for i, id := range ids {
			if entries[i].ID != id {
				return Kept{}
			}
		}
	}
	return Kept{Pieces: p.pieces.Items(), Entries: len(ids), State: p.state, from: p}
}

// Restart is a point where a request's lowering held no state: before
// its entry Entry, after its first Pieces pieces (PieceScope.KeepPrefix).
type Restart struct{ Entry, Pieces int }

// Segments returns a request's cache segments: lead (what comes before
// its pieces: the tools, a Responses request's instructions), then the
// segment of each of the pieces k took and of each piece in added, which
// follow them. When lead is the last request's, the list extends that
// request's list (core.SharedSlice), which holds the taken pieces'
// segments already and usually those of the pieces lowered again after
// them: a turn costs the segments it adds, not a copy of every one.
// Callers must not modify the items.
func (k Kept) Segments(lead []Segment, added []*Piece) core.SharedSlice[Segment] {
	var last core.SharedSlice[Segment]
	keep := 0
	if p := k.from; p != nil && p.lead == len(lead) {
		old := p.segs.Items()
		if len(old) >= len(lead)+len(k.Pieces) && core.SegmentsPrefix(old[:len(lead)], lead) == len(lead) {
			last, keep = p.segs, len(lead)+len(k.Pieces)
			for len(added) > 0 && keep < len(old) && core.SameSegment(old[keep], added[0].Segment) {
				keep, added = keep+1, added[1:]
			}
		}
	}
	var segs []Segment
	if keep == 0 {
		segs = make([]Segment, 0, len(lead)+len(k.Pieces)+len(added))
		segs = append(segs, lead...)
		for _, pc := range k.Pieces {
			segs = append(segs, pc.Segment)
		}
	}
	for _, pc := range added {
		segs = append(segs, pc.Segment)
	}
	return last.Extend(keep, segs...)
}

// KeepPrefix keeps, for the session's next request, that lowering
// entries[:at] gave the pieces this request took from the last one's
// prefix (took) and then added, and that lowering holds no state at entry
// at; and the request's segments (Kept.Segments, of lead leading ones).
func (s *PieceScope) KeepPrefix(entries []core.Entry, at int, added []*Piece, took Kept, segs core.SharedSlice[Segment], lead int) {
	if s == nil || at <= 0 || at < took.Entries {
		return
	}
	last := took.from
	if last == nil {
		last = &loweredPrefix{}
	}
	p := &loweredPrefix{size: last.size, segs: segs, lead: lead}
	var ids []string
	for _, e := range entries[took.Entries:at] {
		ids = append(ids, e.ID)
		p.size += int64(len(e.ID)) + 16 + 8
	}
	for _, pc := range added {
		p.size += 2*int64(len(pc.Raw)) + 8 // members, and the pieces again: a bound, not a tally
	}
	p.size += int64(max(0, len(segs.Items())-len(last.segs.Items()))) * segmentStructBytes
	// A request this large is costed by its bytes, not its entries: keeping
	// its prefix would evict the very pieces it is built from (100 copies
	// of a 256 KiB file are 26 MB, kept twice), and joining them would copy
	// them each turn. Its lookups stay per entry.
	if p.size > s.pieces.max/prefixShare {
		return
	}
	var members []byte
	for i, pc := range added {
		if i > 0 || len(took.Pieces) > 0 {
			members = append(members, ',')
		}
		members = append(members, pc.Raw...)
	}
	p.ids, p.first = last.ids.Extend(took.Entries, ids...), weak.Make(&entries[0])
	p.pieces = last.pieces.Extend(len(took.Pieces), added...)
	p.members = last.members.Extend(len(last.members.Items()), members...)
	s.pieces.Put(s.prefixKey(), p, p.size)
}

// KeepPrefixState keeps, for the session's next request, an adapter's
// state after lowering entries[:at], for an adapter whose lowering is a
// fold over the entries: the next request whose entries start with these
// goes on from state. size is what state holds beyond the pieces it
// shares. took is what this request took from the last one's prefix.
func (s *PieceScope) KeepPrefixState(entries []core.Entry, at int, state any, size int64, took Kept) {
	if s == nil || at <= 0 {
		return
	}
	last := took.from
	if last == nil || at < took.Entries {
		last, took = &loweredPrefix{}, Kept{}
	}
	var ids []string
	idsSize := last.size - last.stateBytes
	for _, e := range entries[took.Entries:at] {
		ids = append(ids, e.ID)
		idsSize += int64(len(e.ID)) + 16 + 8
	}
	p := &loweredPrefix{ids: last.ids.Extend(took.Entries, ids...), first: weak.Make(&entries[0]), state: state, stateBytes: size, size: idsSize + size}
	s.pieces.Put(s.prefixKey(), p, p.size)
}

// PrefixBudget is the most bytes an adapter's kept prefix state may hold
// of its own (0 for a nil scope): as much as KeepPrefix keeps.
func (s *PieceScope) PrefixBudget() int64 {
	if s == nil {
		return 0
	}
	return s.pieces.max / prefixShare
}

// prefixShare: a kept prefix holds at most this fraction of the pieces'
// bound.
const prefixShare = 8

// segmentStructBytes is what a kept segment list holds per segment beyond
// the pieces it shares strings with.
const segmentStructBytes = int64(unsafe.Sizeof(Segment{}))

// prefixKey is where a scope's lowered prefix is kept: one per session,
// model and adapter variant.
func (s *PieceScope) prefixKey() []byte {
	return append([]byte("lowered prefix\x00"), s.prefix...)
}
