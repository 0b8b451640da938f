package store_test

import (
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.SessionLog, blob.Store) {
		blobs := blob.NewMemory()
		return store.NewMemory(blobs), blobs
	})
}
