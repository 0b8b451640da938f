package store_test

import (
	"context"
	"testing"
	"time"

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

func TestMemoryWorkspacesUseItsClock(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	clock := time.UnixMilli(1_000)
	m := store.NewMemory(blobs, store.WithMemoryNow(func() time.Time { return clock }))
	d, err := blobs.Put(ctx, []byte("manifest"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.CreateWorkspace(ctx, "main", d)
	if err != nil || w.CreatedAtMs != 1_000 || w.UpdatedAtMs != 1_000 {
		t.Fatalf("CreateWorkspace = %+v, %v; want times 1000", w, err)
	}
	clock = time.UnixMilli(2_000)
	if w, err = m.MoveHead(ctx, "main", 1, d); err != nil || w.CreatedAtMs != 1_000 || w.UpdatedAtMs != 2_000 {
		t.Fatalf("MoveHead = %+v, %v; want created 1000, updated 2000", w, err)
	}
	if s, err := m.PutSnapshot(ctx, d); err != nil || s.CreatedAtMs != 2_000 {
		t.Fatalf("PutSnapshot = %+v, %v; want time 2000", s, err)
	}
}

func TestMemoryStorageReportConformance(t *testing.T) {
	storetest.RunStorageReport(t, func(t *testing.T) (store.SessionLog, blob.Store) {
		blobs := blob.NewMemory()
		return store.NewMemory(blobs), blobs
	})
}

func TestMemoryRetentionConformance(t *testing.T) {
	storetest.RunRetention(t, func(t *testing.T) (store.SessionLog, blob.Store) {
		blobs := blob.NewMemory()
		return store.NewMemory(blobs), blobs
	})
}

func TestMemoryRetentionRace(t *testing.T) {
	storetest.RunRetentionRace(t, func(t *testing.T) (store.SessionLog, blob.Store) {
		blobs := blob.NewMemory()
		return store.NewMemory(blobs), blobs
	})
}
