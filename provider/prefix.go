package provider

import "github.com/cairn-agents/cairn/core"

// A session's next request repeats its previous one and adds entries at
// the end. Looking every entry's piece up again costs a key and a map
// probe per entry, which at 20,000 entries was half a turn's CPU. So an
// adapter leaves, with its pieces, the prefix it lowered: the ids of the
// entries before a point where its lowering holds no state (a restart
// point), and the pieces lowered from them. The next request whose
// entries start with those ids takes the pieces and lowers from that
// point on; any other request is lowered whole.

// loweredPrefix is one request's prefix, kept for the session's next.
type loweredPrefix struct {
	ids    []string
	pieces []*Piece
}

// Prefix returns the pieces of the entries before the restart point that
// the last request lowered under this scope left, and that point, when
// entries start with that request's entries up to it; else nil and 0.
// Callers must not modify the pieces.
func (s *PieceScope) Prefix(entries []core.Entry) ([]*Piece, int) {
	if s == nil {
		return nil, 0
	}
	v, _ := s.pieces.Get(s.prefixKey())
	p, ok := v.(*loweredPrefix)
	if !ok || len(p.ids) > len(entries) {
		return nil, 0
	}
	for i, id := range p.ids {
		if entries[i].ID != id {
			return nil, 0
		}
	}
	return p.pieces, len(p.ids)
}

// KeepPrefix keeps, for the session's next request, that lowering
// entries[:at] gave pieces, and that lowering holds no state at entry at.
func (s *PieceScope) KeepPrefix(entries []core.Entry, at int, pieces []*Piece) {
	if s == nil || at <= 0 {
		return
	}
	p := &loweredPrefix{ids: make([]string, at), pieces: append([]*Piece(nil), pieces...)}
	size := int64(len(p.pieces)) * 8
	for i := range at {
		p.ids[i] = entries[i].ID
		size += int64(len(p.ids[i])) + 16
	}
	for _, pc := range p.pieces {
		size += int64(len(pc.Raw)) // counted twice while the pieces are kept too: a bound, not a tally
	}
	// A request this large is costed by its bytes, not its entries: keeping
	// its prefix would evict the very pieces it is built from (100 copies
	// of a 256 KiB file are 26 MB, kept twice). Its lookups stay per entry.
	if size > s.pieces.max/prefixShare {
		return
	}
	s.pieces.Put(s.prefixKey(), p, size)
}

// prefixShare: a kept prefix holds at most this fraction of the pieces'
// bound.
const prefixShare = 8

// prefixKey is where a scope's lowered prefix is kept: one per session,
// model and adapter variant.
func (s *PieceScope) prefixKey() []byte {
	return append([]byte("lowered prefix\x00"), s.prefix...)
}
