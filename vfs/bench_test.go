package vfs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/store"
)

// benchTree returns n files totalling exactly total bytes of deterministic
// pseudo-random content, spread over 20 directories of 5 subdirectories.
func benchTree(n int, total int64) map[string][]byte {
	rng := rand.NewChaCha8([32]byte{'c', 'a', 'i', 'r', 'n'})
	files := make(map[string][]byte, n)
	base, extra := total/int64(n), total%int64(n)
	for i := range n {
		size := base
		if int64(i) < extra {
			size++
		}
		data := make([]byte, size)
		_, _ = rng.Read(data)
		files[fmt.Sprintf("d%02d/s%d/file%04d.bin", i%20, i%5, i)] = data
	}
	return files
}

// BenchmarkImportAndEditOneFile imports a 2,000-file, 50 MiB tree, then per
// iteration edits one file and writes the new manifest, reporting what the
// edit step stored: new blobs and new bytes (one file blob and one manifest).
func BenchmarkImportAndEditOneFile(b *testing.B) {
	ctx := context.Background()
	files := benchTree(2000, 50<<20)
	blobs := &countingStore{Store: blob.NewMemory()}
	edges := store.NewMemory(blobs.Store)
	m, err := Build(ctx, blobs, files, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := WriteManifest(ctx, blobs, edges, m); err != nil {
		b.Fatal(err)
	}
	importBlobs, importBytes := blobs.reset()

	target := m.Files[1234].Path
	for i := 0; b.Loop(); i++ {
		data := fmt.Appendf(nil, "edit %d of %s\n", i, target)
		m2, _, err := Edit(ctx, blobs, m, target, data, Limits{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := WriteManifest(ctx, blobs, edges, m2); err != nil {
			b.Fatal(err)
		}
	}
	n, size := blobs.reset()
	// Reported after the loop: the timer reset inside b.Loop drops metrics.
	b.ReportMetric(float64(importBlobs), "import-blobs")
	b.ReportMetric(float64(importBytes), "import-bytes")
	b.ReportMetric(float64(n)/float64(b.N), "edit-new-blobs/op")
	b.ReportMetric(float64(size)/float64(b.N), "edit-new-bytes/op")
}
