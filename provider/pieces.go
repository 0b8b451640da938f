package provider

import (
	"container/list"
	"encoding/binary"
	"sync"

	"github.com/cairn-agents/cairn/core"
)

// Pieces keeps the pieces requests are built from between generations.
//
// A context entry never changes once committed: its id always names the
// same ContentRef, and the bytes behind a digest never change. So the
// native form an adapter lowers it to never changes either, and a turn need
// only lower the entries it has not lowered before and copy the rest. Each
// adapter keeps whatever unit it lowers (a message folded from several
// entries, an input item, an entry's blocks) with its cache-segment
// description, under a key naming every entry it covers and every request
// option that changes it (see PieceScope). Nothing position-dependent, such
// as a cache marker, goes into a piece. The executor keeps its stored
// segment chunks here too.
//
// Pieces is bounded by bytes and drops the least recently used piece first,
// so memory stays bounded however many sessions a process serves; a dropped
// piece is lowered again from its blob, which costs what every turn cost
// before. Safe for concurrent use. A nil *Pieces keeps nothing.
type Pieces struct {
	max int64

	mu    sync.Mutex
	size  int64
	byKey map[string]*list.Element
	order *list.List // front = most recently used; values are *kept
}

// kept is one piece in the list, with what the bound counts of it.
type kept struct {
	key  string
	v    any
	size int64
}

// pieceOverhead approximates what a kept piece costs besides its key and
// the size its owner declares (list element, map slot, segment fields).
const pieceOverhead = 128

// NewPieces returns a cache holding at most maxBytes of pieces.
func NewPieces(maxBytes int64) *Pieces {
	return &Pieces{max: maxBytes, byKey: map[string]*list.Element{}, order: list.New()}
}

// Get returns the piece kept under key and marks it recently used. Callers
// must not modify what it returns: other requests share it.
func (p *Pieces) Get(key []byte) (any, bool) {
	if p == nil {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	el, ok := p.byKey[string(key)] // no copy of key: a lookup does not keep it
	if !ok {
		return nil, false
	}
	p.order.MoveToFront(el)
	return el.Value.(*kept).v, true
}

// Put keeps v under key, in place of what was kept there; size is the
// bytes v holds. A piece larger than the whole bound is not kept. Callers
// must not modify v afterwards.
func (p *Pieces) Put(key []byte, v any, size int64) {
	if p == nil {
		return
	}
	size += int64(len(key)) + pieceOverhead
	if size > p.max {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if el, ok := p.byKey[string(key)]; ok {
		// A concurrent request lowered it too, or the owner replaces
		// what it keeps under the key (a session's last segment list).
		pc := el.Value.(*kept)
		p.size += size - pc.size
		pc.v, pc.size = v, size
		p.order.MoveToFront(el)
	} else {
		k := string(key)
		p.byKey[k] = p.order.PushFront(&kept{key: k, v: v, size: size})
		p.size += size
	}
	for p.size > p.max {
		el := p.order.Back()
		pc := el.Value.(*kept)
		p.order.Remove(el)
		delete(p.byKey, pc.key)
		p.size -= pc.size
	}
}

// PieceScope is one request's view of a Pieces: its keys carry what,
// besides the entries, decides how an adapter lowers them. A nil
// *PieceScope keeps nothing. Not for concurrent use: one request lowers
// through it.
type PieceScope struct {
	pieces *Pieces
	prefix []byte
	key    []byte // scratch, reused from piece to piece
}

// Scope returns the view for a request lowered by an adapter of apiKind;
// variant names the adapter's options that change how entries lower (say,
// the field reasoning is re-sent under). The session and model are part of
// every key although no adapter's entry lowering reads them today: a piece
// is then never shared with a request it was not made for.
func (p *Pieces) Scope(apiKind string, req Request, variant string) *PieceScope {
	if p == nil {
		return nil
	}
	var b []byte
	for _, s := range []string{apiKind, req.SessionID, req.Model.Model, variant} {
		b = appendField(b, s)
	}
	return &PieceScope{pieces: p, prefix: b}
}

// AppendKey appends to dst the key of the piece lowered from entries, in
// order: every entry field an adapter's lowering reads (and the cache
// segment records) is in it. Callers reuse dst from entry to entry, so a
// request that finds its pieces allocates no keys. A nil scope appends
// nothing.
func (s *PieceScope) AppendKey(dst []byte, entries ...core.Entry) []byte {
	if s == nil {
		return dst
	}
	dst = append(dst, s.prefix...)
	for _, e := range entries {
		dst = appendField(dst, e.ID)
		dst = appendField(dst, e.Key)
		dst = appendField(dst, e.Kind)
		dst = appendField(dst, e.Role)
		dst = appendField(dst, e.CallID)
		dst = append(dst, e.Content.Digest[:]...)
		dst = appendField(dst, e.Content.MediaType)
		dst = appendField(dst, e.Content.ProviderKind)
	}
	return dst
}

// Get returns the piece kept under key (from AppendKey).
func (s *PieceScope) Get(key []byte) (any, bool) {
	if s == nil {
		return nil, false
	}
	return s.pieces.Get(key)
}

// Put keeps v, holding size bytes, under key (from AppendKey).
func (s *PieceScope) Put(key []byte, v any, size int64) {
	if s != nil {
		s.pieces.Put(key, v, size)
	}
}

// Piece is the piece an adapter keeps when its unit is one run of bytes
// (a message, an input item): the bytes and their cache segment. A nil Raw
// records that the entries lower to nothing a request carries.
type Piece struct {
	Raw     []byte
	Segment Segment
}

// Lookup returns the Piece kept for the entries src.
func (s *PieceScope) Lookup(src ...core.Entry) (*Piece, bool) {
	if s == nil {
		return nil, false
	}
	s.key = s.AppendKey(s.key[:0], src...)
	v, _ := s.Get(s.key)
	p, ok := v.(*Piece)
	return p, ok
}

// Keep returns the Piece of raw, lowered from src, with a segment of kind
// kind, and keeps it for the requests after this one.
func (s *PieceScope) Keep(kind string, src []core.Entry, raw []byte) *Piece {
	p := &Piece{Raw: raw}
	if raw != nil {
		p.Segment = core.NewCacheSegment(kind, "", raw, src)
	}
	if s != nil {
		s.key = s.AppendKey(s.key[:0], src...)
		s.Put(s.key, p, int64(len(raw))+SegmentSize(p.Segment))
	}
	return p
}

// SegmentSize is the bytes a kept segment holds in its strings, for the
// size a piece declares to Put.
func SegmentSize(s Segment) int64 {
	n := len(s.Kind) + len(s.Ref) + len(s.Digest)
	for _, x := range s.Entries {
		n += len(x)
	}
	for _, x := range s.Keys {
		n += len(x)
	}
	return int64(n)
}

// appendField appends s with its length, so that no two field lists make
// the same key.
func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
