package core

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cairn-agents/cairn/content"
)

// FingerprintPrefix marks request fingerprints; it is deliberately not
// "sha256:" so a fingerprint is never mistaken for a blob ref.
const FingerprintPrefix = "fp2:"

// fingerprintV1Prefix marks fingerprints planned before version 2: their
// header counted the entries, so a hash over a request's leading entries
// could not be continued by the next, longer request.
const fingerprintV1Prefix = "fp1:"

// PlanFingerprint identifies the inputs a request is built from: the model
// selection, the tools in presentation order, and each entry's identity and
// content in request order. A request rebuilt from the log at the planned
// revision must produce the same fingerprint.
func PlanFingerprint(cfg SessionConfig, entries []Entry) string {
	fp, _ := (*FingerprintMemo)(nil).Fingerprint(cfg, entries)
	return fp
}

// FingerprintMatches reports whether entries under cfg are the request a
// turn planned with fingerprint planned, of either version, with the memo
// of this request (see FingerprintMemo; memo may be nil).
func FingerprintMatches(planned string, cfg SessionConfig, entries []Entry, memo *FingerprintMemo) (bool, *FingerprintMemo) {
	if strings.HasPrefix(planned, fingerprintV1Prefix) {
		p := newPlanHash(cfg, len(entries))
		for i := range entries {
			p.entry(&entries[i])
		}
		return p.sum(fingerprintV1Prefix) == planned, memo
	}
	fp, next := memo.Fingerprint(cfg, entries)
	return fp == planned, next
}

// FingerprintMemo keeps the hash of the last request fingerprinted through
// it. A session's next request repeats its previous one and adds entries
// at the end, so it hashes only what it added: the cost of a turn, not of
// the session. A request that does not start with the remembered entries
// (an edit, a removal, a new instruction, another config) is hashed whole.
// A memo never changes once made, so any number of readers may share it;
// a nil memo remembers nothing. Entries given to it must not change
// afterwards at the same address (a State's never do: see copyOnWrite):
// the memo knows an entry it hashed by its address before its content.
type FingerprintMemo struct {
	header  []byte
	entries SharedSlice[fingerprinted] // the next memo extends it in place
	h       hash.Cloner                // after header and entries
	// run is the address of the first entry when every entry remembered
	// is the one after it in the same array (memoHash.run), else nil: a
	// request whose run starts there, and is as long, starts with them
	// all, without a look at each.
	run *Entry
}

// fingerprinted is what a memo checks to know an entry is the one it
// hashed: the same address, which costs no read of the entry (at 20,000
// entries reading each was most of a plan), or else the same id and
// content, since entries never change once committed.
type fingerprinted struct {
	at     *Entry
	id     string
	digest content.Digest
}

func (f *fingerprinted) is(e *Entry) bool {
	return e == f.at || (e.ID == f.id && e.Content.Digest == f.digest)
}

// Fingerprint returns PlanFingerprint(cfg, entries) and the memo of this
// request.
func (m *FingerprintMemo) Fingerprint(cfg SessionConfig, entries []Entry) (string, *FingerprintMemo) {
	p := m.start(cfg, 0)
	p.run = entries
	return p.sum()
}

// start begins a fingerprint that takes its entries, about n of them, one
// at a time (add).
func (m *FingerprintMemo) start(cfg SessionConfig, n int) *memoHash {
	buf := memoLists.Get().(*[]*Entry)
	return &memoHash{m: m, header: appendHeader(nil, cfg), entries: slices.Grow((*buf)[:0], n), buf: buf, remember: -1}
}

// memoLists are the lists a memoHash collects a request's entries in. A
// list is given back once summed (a memo keeps fingerprints of entries,
// not the list), so a turn of a long session does not allocate one the
// size of its context twice (for its plan and for its request). Which
// list a hash gets changes nothing it computes.
var memoLists = sync.Pool{New: func() any { return new([]*Entry) }}

// memoHash collects a request's entries and hashes, at sum, only those
// after the memo's when the request starts with them.
type memoHash struct {
	m      *FingerprintMemo
	header []byte
	// run are the request's first entries, when the caller has them in
	// one slice (a State in request order, a request's list), and entries
	// the ones after them (add).
	run     []Entry
	entries []*Entry
	buf     *[]*Entry // where entries came from, to give back (memoLists)
	// remember is how many of the entries the next memo remembers (all
	// when negative): the planner's last entries are proposals, which the
	// state then holds at other addresses.
	remember int
}

func (p *memoHash) add(e *Entry) { p.entries = append(p.entries, e) }

// count is the number of the request's entries.
func (p *memoHash) count() int { return len(p.run) + len(p.entries) }

// at is the request's i-th entry.
func (p *memoHash) at(i int) *Entry {
	if i < len(p.run) {
		return &p.run[i]
	}
	return p.entries[i-len(p.run)]
}

func (p *memoHash) sum() (string, *FingerprintMemo) {
	m := p.m
	if m == nil {
		m = &FingerprintMemo{}
	}
	keep, moved := 0, false
	if remembered := m.entries.Items(); m.h != nil && string(m.header) == string(p.header) && len(remembered) <= p.count() {
		keep = len(remembered)
		if m.run == nil || len(p.run) < keep || keep == 0 || &p.run[0] != m.run {
			for i := range remembered {
				f, e := &remembered[i], p.at(i)
				if !f.is(e) {
					keep = 0
					break
				}
				moved = moved || f.at != e
			}
		}
	}
	var ph planHash
	if keep > 0 {
		c, err := m.h.Clone()
		if err != nil { // SHA-256 clones without error; hash it all if not
			keep = 0
		} else {
			ph.h = c
		}
	}
	if keep == 0 {
		ph.h = sha256.New()
		ph.h.Write(p.header)
	}
	copy(ph.digest[:], content.DigestPrefix)
	upTo := p.count() // the entries the next memo remembers
	if p.remember >= keep && p.remember < upTo {
		upTo = p.remember
	}
	for i := keep; i < upTo; i++ {
		ph.entry(p.at(i))
	}
	var next *FingerprintMemo
	if c, ok := ph.h.(hash.Cloner); ok {
		if upTo < p.count() {
			c, _ = c.Clone() // SHA-256 clones without error; a nil memo remembers nothing
		}
		if c != nil {
			next = &FingerprintMemo{header: p.header, h: c}
			if moved { // remember where the entries are now, so the next look is by address again
				next.entries = SharedSlice[fingerprinted]{}.Extend(0, p.fingerprints(0, upTo)...)
			} else {
				next.entries = m.entries.Extend(keep, p.fingerprints(keep, upTo)...)
			}
			if upTo > 0 && upTo <= len(p.run) { // every one remembered is at &p.run[i]
				next.run = &p.run[0]
			}
		}
	}
	for i := upTo; i < p.count(); i++ {
		ph.entry(p.at(i))
	}
	clear(p.entries) // a pooled list must not keep a state's entries alive
	*p.buf, p.entries, p.run = p.entries[:0], nil, nil
	memoLists.Put(p.buf)
	return ph.sum(FingerprintPrefix), next
}

// fingerprints are what a memo remembers of the request's entries from
// index from up to to.
func (p *memoHash) fingerprints(from, to int) []fingerprinted {
	out := make([]fingerprinted, to-from)
	for i := range out {
		e := p.at(from + i)
		out[i] = fingerprinted{at: e, id: e.ID, digest: e.Content.Digest}
	}
	return out
}

// appendHeader appends the request fields before its entries.
func appendHeader(b []byte, cfg SessionConfig) []byte {
	var p planHash
	p.buf = b
	p.field(cfg.Model.ProviderID)
	p.field(cfg.Model.APIKind)
	p.field(cfg.Model.Model)
	if len(cfg.ProviderParams) > 0 { // absent params leave older fingerprints unchanged
		p.field("params")
		p.field(string(cfg.ProviderParams))
	}
	p.field(strconv.Itoa(len(cfg.Tools)))
	for _, t := range cfg.Tools {
		p.field(t)
	}
	for _, t := range cfg.ClientTools { // none leave older fingerprints unchanged
		p.field("client tool")
		p.field(t.Name)
		p.field(t.Description)
		p.field(string(t.Parameters))
	}
	if cfg.MCPCatalog != nil { // the definitions' digest covers the names too
		p.field("mcp catalog")
		p.field(cfg.MCPCatalog.Digest.String())
	}
	return p.buf
}

// planHash hashes a request entry by entry. Fields are written as
// "<len>:<bytes>" into one buffer per entry and hashed together: the same
// bytes as hashing each field alone, without an allocation per field (a
// context holds thousands of entries). Every entry writes the same fields,
// so the stream parses one way without counting the entries.
type planHash struct {
	h      hash.Hash
	buf    []byte
	digest [len(content.DigestPrefix) + 2*sha256.Size]byte
}

// newPlanHash starts a version 1 fingerprint of a request of n entries.
func newPlanHash(cfg SessionConfig, n int) *planHash {
	p := &planHash{h: sha256.New()}
	copy(p.digest[:], content.DigestPrefix)
	p.buf = appendHeader(p.buf, cfg)
	p.field(strconv.Itoa(n))
	p.flush()
	return p
}

func (p *planHash) field(s string) {
	p.buf = strconv.AppendInt(p.buf, int64(len(s)), 10)
	p.buf = append(p.buf, ':')
	p.buf = append(p.buf, s...)
}

func (p *planHash) flush() {
	p.h.Write(p.buf)
	p.buf = p.buf[:0]
}

// entry adds the next entry of the request.
func (p *planHash) entry(e *Entry) {
	p.field(e.ID)
	p.field(e.Kind)
	p.field(e.Role)
	hex.Encode(p.digest[len(content.DigestPrefix):], e.Content.Digest[:])
	p.buf = strconv.AppendInt(p.buf, int64(len(p.digest)), 10)
	p.buf = append(p.buf, ':')
	p.buf = append(p.buf, p.digest[:]...)
	p.field(e.Content.MediaType)
	p.field(e.Content.ProviderKind)
	p.field(e.CallID)
	p.field(e.ToolName)
	p.flush()
}

func (p *planHash) sum(prefix string) string {
	return prefix + hex.EncodeToString(p.h.Sum(nil))
}

// InputFingerprint identifies a run submission's payload, so a retry with the
// same submission id can be recognised as the same request.
func InputFingerprint(items []InputItem) string {
	h := sha256.New()
	for _, it := range items {
		h.Write([]byte(it.Content.Digest.String()))
		h.Write([]byte{0})
		h.Write([]byte(it.Content.MediaType))
		h.Write([]byte{0})
		if it.Kind != "" { // text input keeps its older fingerprint
			h.Write([]byte(it.Kind + "\x00" + it.Filename + "\x00"))
		}
	}
	return "in1:" + hex.EncodeToString(h.Sum(nil))
}
