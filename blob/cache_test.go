package blob_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
)

// countingStore counts Gets that reach the wrapped store.
type countingStore struct {
	blob.Store
	mu   sync.Mutex
	gets map[content.Digest]int
}

func (c *countingStore) Get(ctx context.Context, d content.Digest) ([]byte, error) {
	c.mu.Lock()
	c.gets[d]++
	c.mu.Unlock()
	return c.Store.Get(ctx, d)
}

func (c *countingStore) count(d content.Digest) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets[d]
}

func TestCachedServesRepeatGetsFromMemory(t *testing.T) {
	ctx := context.Background()
	inner := &countingStore{Store: blob.NewMemory(), gets: map[content.Digest]int{}}
	c := blob.Cached(inner, 10)

	a, _ := c.Put(ctx, []byte("aaaa"))
	b, _ := c.Put(ctx, []byte("bbbb"))
	big, _ := c.Put(ctx, []byte("larger than ten bytes"))

	get := func(d content.Digest, want string) {
		t.Helper()
		got, err := c.Get(ctx, d)
		if err != nil || string(got) != want {
			t.Fatalf("Get = %q, %v; want %q", got, err, want)
		}
	}
	get(a, "aaaa")
	get(a, "aaaa")
	if n := inner.count(a); n != 1 {
		t.Fatalf("inner Gets of a = %d, want 1 (second Get should hit the cache)", n)
	}

	get(big, "larger than ten bytes")
	get(big, "larger than ten bytes")
	if n := inner.count(big); n != 2 {
		t.Fatalf("inner Gets of oversized blob = %d, want 2 (never cached)", n)
	}

	// a (4) + b (4) fit; adding c (4) exceeds 10 and evicts the least recently used.
	cd, _ := c.Put(ctx, []byte("cccc"))
	get(b, "bbbb")
	get(a, "aaaa") // a is now more recent than b
	get(cd, "cccc")
	get(a, "aaaa")
	if n := inner.count(a); n != 1 {
		t.Fatalf("inner Gets of a = %d, want 1 (recently used, must stay cached)", n)
	}
	get(b, "bbbb")
	if n := inner.count(b); n != 2 {
		t.Fatalf("inner Gets of b = %d, want 2 (least recently used, must be evicted)", n)
	}
}

func TestCachedDoesNotCacheAbsence(t *testing.T) {
	ctx := context.Background()
	c := blob.Cached(blob.NewMemory(), 1<<20)
	d := content.Sum([]byte("later"))
	if _, err := c.Get(ctx, d); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Get before Put: %v, want ErrNotFound", err)
	}
	if _, err := c.Put(ctx, []byte("later")); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, d)
	if err != nil || string(got) != "later" {
		t.Fatalf("Get after Put = %q, %v", got, err)
	}
}

// corruptStore fails every Get as a damaged backend would.
type corruptStore struct{ blob.Store }

func (corruptStore) Get(ctx context.Context, d content.Digest) ([]byte, error) {
	return nil, blob.ErrCorrupt
}

func TestCachedPassesErrorsThrough(t *testing.T) {
	c := blob.Cached(corruptStore{blob.NewMemory()}, 1<<20)
	if _, err := c.Get(context.Background(), content.Sum([]byte("x"))); !errors.Is(err, blob.ErrCorrupt) {
		t.Fatalf("Get: %v, want ErrCorrupt", err)
	}
}

// Bytes stored around the cache (a batch a store writes in one
// transaction) and then warmed are read from memory; a copy is kept, so
// the caller's slice cannot change them; what is larger than the bound is
// not kept; and warming a store that is not a cache changes nothing.
func TestWarmKeepsStoredBytes(t *testing.T) {
	ctx := context.Background()
	inner := &countingStore{Store: blob.NewMemory(), gets: map[content.Digest]int{}}
	c := blob.Cached(inner, 10)
	small, big := []byte("input"), []byte("larger than ten bytes")
	for _, data := range [][]byte{small, big} {
		if _, err := inner.Put(ctx, data); err != nil {
			t.Fatal(err)
		}
	}
	warmed := [][]byte{append([]byte(nil), small...), big}
	blob.Warm(c, warmed)
	warmed[0][0] = 'X'
	for _, data := range [][]byte{small, big} {
		got, err := c.Get(ctx, content.Sum(data))
		if err != nil || string(got) != string(data) {
			t.Fatalf("Get(%q) = %q, %v", data, got, err)
		}
	}
	if n := inner.count(content.Sum(small)); n != 0 {
		t.Errorf("a warmed blob reached the store %d times, want 0", n)
	}
	if n := inner.count(content.Sum(big)); n != 1 {
		t.Errorf("a blob over the bound reached the store %d times, want 1", n)
	}
	blob.Warm(inner, [][]byte{[]byte("not a cache")}) // no effect, no panic
	if _, err := inner.Get(ctx, content.Sum([]byte("not a cache"))); err == nil {
		t.Error("warming a store that is not a cache stored a blob")
	}
}
