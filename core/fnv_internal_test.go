package core

import (
	"hash/fnv"
	"testing"

	"github.com/cairn-agents/cairn/content"
)

// The chunk cuts hash ids as hash/fnv's FNV-1a does: checkpoints written
// before share their chunks with the ones written now.
func TestFNV32aIsHashFNV(t *testing.T) {
	for _, s := range []string{"", "e1", "run_a4d20fa9c19c4bf7", "sha256:0123", "ünïcode"} {
		h := fnv.New32a()
		h.Write([]byte(s))
		if got, want := fnv32a(s), h.Sum32(); got != want {
			t.Errorf("fnv32a(%q) = %d, want %d", s, got, want)
		}
	}
}

// Pages are cut by their chunks' digests as strings; fnv32aDigest hashes
// that form without building it.
func TestFNV32aDigestIsFNVOfTheString(t *testing.T) {
	for _, data := range []string{"", "a chunk", "another chunk"} {
		d := content.Sum([]byte(data))
		if got, want := fnv32aDigest(d), fnv32a(d.String()); got != want {
			t.Errorf("fnv32aDigest(%s) = %d, want %d", d, got, want)
		}
	}
}
