package core

import (
	"crypto/sha256"
	"encoding/hex"
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
	h := sha256.New()
	// Fields are written as "<len>:<bytes>" into one buffer per entry and
	// hashed together: the same bytes as hashing each field alone, without
	// an allocation per field (a context holds thousands of entries).
	var buf []byte
	field := func(s string) {
		buf = strconv.AppendInt(buf, int64(len(s)), 10)
		buf = append(buf, ':')
		buf = append(buf, s...)
	}
	flush := func() {
		h.Write(buf)
		buf = buf[:0]
	}
	field(cfg.Model.ProviderID)
	field(cfg.Model.APIKind)
	field(cfg.Model.Model)
	if len(cfg.ProviderParams) > 0 { // absent params leave older fingerprints unchanged
		field("params")
		field(string(cfg.ProviderParams))
	}
	field(strconv.Itoa(len(cfg.Tools)))
	for _, t := range cfg.Tools {
		field(t)
	}
	field(strconv.Itoa(len(entries)))
	flush()
	var digest [len(content.DigestPrefix) + 2*sha256.Size]byte
	copy(digest[:], content.DigestPrefix)
	for i := range entries {
		e := &entries[i]
		field(e.ID)
		field(e.Kind)
		field(e.Role)
		hex.Encode(digest[len(content.DigestPrefix):], e.Content.Digest[:])
		buf = strconv.AppendInt(buf, int64(len(digest)), 10)
		buf = append(buf, ':')
		buf = append(buf, digest[:]...)
		field(e.Content.MediaType)
		field(e.Content.ProviderKind)
		field(e.CallID)
		field(e.ToolName)
		flush()
	}
	return FingerprintPrefix + hex.EncodeToString(h.Sum(nil))
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
