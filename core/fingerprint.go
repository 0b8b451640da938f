package core

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strconv"

	"github.com/cairn-agents/cairn/content"
)

// FingerprintPrefix marks request fingerprints; it is deliberately not
// "sha256:" so a fingerprint is never mistaken for a blob ref.
const FingerprintPrefix = "fp1:"

// PlanFingerprint identifies the inputs a request is built from: the model
// selection, the tools in presentation order, and each entry's identity and
// content in request order. A request rebuilt from the log at the planned
// revision must produce the same fingerprint.
func PlanFingerprint(cfg SessionConfig, entries []Entry) string {
	p := newPlanHash(cfg, len(entries))
	for i := range entries {
		p.entry(&entries[i])
	}
	return p.sum()
}

// planHash computes a PlanFingerprint entry by entry. Fields are written as
// "<len>:<bytes>" into one buffer per entry and hashed together: the same
// bytes as hashing each field alone, without an allocation per field (a
// context holds thousands of entries).
type planHash struct {
	h      hash.Hash
	buf    []byte
	digest [len(content.DigestPrefix) + 2*sha256.Size]byte
}

// newPlanHash starts the fingerprint of a request of n entries.
func newPlanHash(cfg SessionConfig, n int) *planHash {
	p := &planHash{h: sha256.New()}
	copy(p.digest[:], content.DigestPrefix)
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

func (p *planHash) sum() string {
	return FingerprintPrefix + hex.EncodeToString(p.h.Sum(nil))
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
