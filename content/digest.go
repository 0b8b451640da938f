// Package content names immutable bytes: SHA-256 digests, content references,
// canonical JSON, and the extraction of exact ref strings from JSON documents.
package content

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// DigestPrefix starts the only accepted string form of a Digest.
const DigestPrefix = "sha256:"

// digestLen is the length of a digest's string form: prefix plus 64 hex digits.
const digestLen = len(DigestPrefix) + 2*sha256.Size

// Digest is the SHA-256 of a blob's bytes. Its zero value means "no digest".
type Digest [sha256.Size]byte

// ErrInvalidDigest is returned (wrapped) for any string that is not exactly
// "sha256:" followed by 64 lowercase hex digits.
var ErrInvalidDigest = errors.New("invalid digest")

// Sum returns the digest of data.
func Sum(data []byte) Digest { return Digest(sha256.Sum256(data)) }

// ParseDigest accepts exactly "sha256:" + 64 lowercase hex digits, except
// the all-zero digest.
func ParseDigest(s string) (Digest, error) {
	if !IsDigestString(s) {
		return Digest{}, fmt.Errorf("%w: %q", ErrInvalidDigest, truncate(s, 80))
	}
	var d Digest
	if _, err := hex.Decode(d[:], []byte(s[len(DigestPrefix):])); err != nil {
		return Digest{}, fmt.Errorf("%w: %q", ErrInvalidDigest, truncate(s, 80))
	}
	if d.IsZero() {
		// The zero value means "no digest" everywhere; no content hashes to it.
		return Digest{}, fmt.Errorf("%w: the all-zero digest names no content", ErrInvalidDigest)
	}
	return d, nil
}

// MustParseDigest is ParseDigest for constants; it panics on bad input.
func MustParseDigest(s string) Digest {
	d, err := ParseDigest(s)
	if err != nil {
		panic(err)
	}
	return d
}

// IsDigestString reports whether s is exactly a digest's string form.
// Uppercase hex is rejected so that every digest has one spelling.
func IsDigestString(s string) bool {
	if len(s) != digestLen || s[:len(DigestPrefix)] != DigestPrefix {
		return false
	}
	for i := len(DigestPrefix); i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// String returns "sha256:" + 64 lowercase hex digits.
func (d Digest) String() string {
	buf := make([]byte, digestLen)
	copy(buf, DigestPrefix)
	hex.Encode(buf[len(DigestPrefix):], d[:])
	return string(buf)
}

// Hex returns the 64 hex digits without the prefix (for object keys).
func (d Digest) Hex() string { return hex.EncodeToString(d[:]) }

// IsZero reports whether d is the zero value.
func (d Digest) IsZero() bool { return d == Digest{} }

// MarshalText encodes the string form; the zero digest cannot be encoded.
func (d Digest) MarshalText() ([]byte, error) {
	if d.IsZero() {
		return nil, fmt.Errorf("%w: zero digest", ErrInvalidDigest)
	}
	return []byte(d.String()), nil
}

// UnmarshalText parses the string form strictly.
func (d *Digest) UnmarshalText(b []byte) error {
	p, err := ParseDigest(string(b))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

var _ json.Marshaler = ContentRef{}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
