package blob_test

import (
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/blob/blobtest"
)

func TestMemoryConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return blob.NewMemory() })
}

func TestCachedConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return blob.Cached(blob.NewMemory(), 256<<10) })
}
