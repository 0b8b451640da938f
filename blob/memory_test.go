package blob_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/blob/blobtest"
	"github.com/cairn-agents/cairn/content"
)

func TestMemoryConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return blob.NewMemory() })
}

func TestCachedConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return blob.Cached(blob.NewMemory(), 256<<10) })
}

func TestMemoryTouchRenewsAndReadsDoNot(t *testing.T) {
	ctx := context.Background()
	m := blob.NewMemory()
	now := time.UnixMilli(1_000)
	m.SetClock(func() time.Time { return now })
	d, err := m.Put(ctx, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	touched := func() int64 { return m.Entries()[0].TouchedAt.UnixMilli() }
	now = time.UnixMilli(2_000)
	if _, err := m.Get(ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Missing(ctx, []content.Digest{d}); err != nil {
		t.Fatal(err)
	}
	if got := touched(); got != 1_000 {
		t.Fatalf("a read moved the touch time to %d", got)
	}
	if _, err := m.Touch(ctx, []content.Digest{d}); err != nil {
		t.Fatal(err)
	}
	if got := touched(); got != 2_000 {
		t.Fatalf("Touch left the touch time at %d, want 2000", got)
	}
	now = time.UnixMilli(1_500)
	if _, err := m.Touch(ctx, []content.Digest{d}); err != nil {
		t.Fatal(err)
	}
	if got := touched(); got != 2_000 {
		t.Fatalf("an older Touch moved the touch time back to %d", got)
	}
}
