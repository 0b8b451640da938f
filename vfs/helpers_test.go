package vfs

import (
	"context"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
)

// countingStore wraps a blob.Store and counts Puts that stored new bytes.
type countingStore struct {
	blob.Store
	mu       sync.Mutex
	newBlobs int64
	newBytes int64
}

func (c *countingStore) Put(ctx context.Context, data []byte) (content.Digest, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	miss, err := c.Store.Missing(ctx, []content.Digest{content.Sum(data)})
	if err != nil {
		return content.Digest{}, err
	}
	d, err := c.Store.Put(ctx, data)
	if err == nil && len(miss) > 0 {
		c.newBlobs++
		c.newBytes += int64(len(data))
	}
	return d, err
}

func (c *countingStore) reset() (blobs, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	blobs, bytes = c.newBlobs, c.newBytes
	c.newBlobs, c.newBytes = 0, 0
	return blobs, bytes
}

func mustBuild(t testing.TB, blobs blob.Store, files map[string][]byte) Manifest {
	t.Helper()
	m, err := Build(context.Background(), blobs, files, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sampleFiles() map[string][]byte {
	return map[string][]byte{
		"README.md":               []byte("# Sample\n"),
		"docs/guide.md":           []byte("Guide\n"),
		"docs/notes.txt":          []byte("notes\n"),
		"docs/api/v1.json":        []byte(`{"v":1}`),
		"src/main.go":             []byte("package main\n"),
		"src/logo.bin":            {0, 1, 2, 3, 0xff},
		"a.txt":                   []byte("a"),
		"a/b/c/deep.md":           []byte("deep"),
		".cairn/prompts/inst.md":  []byte("Be brief.\n"),
		"same-as-notes/notes.txt": []byte("notes\n"),
	}
}
