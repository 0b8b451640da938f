package content

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// ExtractRefs returns every digest that appears in doc as an exact JSON string
// value or object key ("sha256:<64 hex>"), sorted and without duplicates. A ref
// inside a longer string does not count: only an exact ref string is a reference.
func ExtractRefs(doc []byte) ([]Digest, error) {
	// The token loop below stops quietly at EOF, so a truncated document,
	// an empty one or a stream of several values would pass unnoticed.
	if !json.Valid(doc) {
		return nil, fmt.Errorf("extract refs: not a single valid JSON document")
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	seen := map[Digest]struct{}{}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("extract refs: %w", err)
		}
		if s, ok := tok.(string); ok && IsDigestString(s) {
			d, _ := ParseDigest(s)
			seen[d] = struct{}{}
		}
	}
	out := make([]Digest, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	SortDigests(out)
	return out, nil
}

// SortDigests sorts digests by their bytes (equal to their string order).
func SortDigests(ds []Digest) {
	sort.Slice(ds, func(i, j int) bool { return bytes.Compare(ds[i][:], ds[j][:]) < 0 })
}
