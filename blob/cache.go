package blob

import (
	"container/list"
	"context"
	"sync"

	"github.com/cairn-agents/cairn/content"
)

// Cached wraps s with a read-through LRU of verified bytes holding at most
// maxBytes in total. Bytes are immutable under their digest, so a cached copy
// never goes stale. Put, Missing, Touch and Usage always go to s: s stays the
// authority on what exists and Put must still renew the blob there.
// A blob larger than maxBytes is never cached.
func Cached(s Store, maxBytes int64) Store {
	return &cached{inner: s, max: maxBytes, byDigest: map[content.Digest]*list.Element{}, order: list.New()}
}

type cached struct {
	inner Store
	max   int64

	mu       sync.Mutex
	size     int64
	byDigest map[content.Digest]*list.Element
	order    *list.List // front = most recently used; values are *cacheEntry
}

type cacheEntry struct {
	digest content.Digest
	data   []byte
}

func (c *cached) Put(ctx context.Context, data []byte) (content.Digest, error) {
	return c.inner.Put(ctx, data)
}

func (c *cached) Get(ctx context.Context, d content.Digest) ([]byte, error) {
	if data, ok := c.lookup(d); ok {
		return data, nil
	}
	data, err := c.inner.Get(ctx, d)
	if err != nil {
		return nil, err
	}
	// The inner store verified these bytes; keep our own copy so a caller
	// mutating its slice cannot poison the cache.
	c.add(d, append([]byte(nil), data...))
	return data, nil
}

// GetMany implements ManyGetter: what the cache holds, and the rest from
// the inner store in one call. What that call reads is not cached: it is
// for one request (a session's first in this process), which lowers it
// once, and caching it could push out the blobs the next turns read.
func (c *cached) GetMany(ctx context.Context, ds []content.Digest) (map[content.Digest][]byte, error) {
	out := make(map[content.Digest][]byte, len(ds))
	var rest []content.Digest
	for _, d := range ds {
		if data, ok := c.lookup(d); ok {
			out[d] = data
		} else {
			rest = append(rest, d)
		}
	}
	got, err := GetMany(ctx, c.inner, rest)
	if err != nil {
		return nil, err
	}
	for d, data := range got {
		out[d] = data
	}
	return out, nil
}

// Warm keeps copies of blobs that were just stored, when s is a Cached
// store: a session's next request lowers what its last turn wrote (the
// user's input, the answer), and reading it back from the store cost
// more than the copy. Any other s is left alone.
func Warm(s Store, blobs [][]byte) {
	c, ok := s.(*cached)
	if !ok {
		return
	}
	for _, data := range blobs {
		if int64(len(data)) <= c.max {
			c.add(content.Sum(data), append([]byte(nil), data...))
		}
	}
}

func (c *cached) Missing(ctx context.Context, ds []content.Digest) ([]content.Digest, error) {
	return c.inner.Missing(ctx, ds)
}

func (c *cached) Touch(ctx context.Context, ds []content.Digest) ([]content.Digest, error) {
	return c.inner.Touch(ctx, ds)
}

func (c *cached) Usage(ctx context.Context) (Usage, error) { return c.inner.Usage(ctx) }

// lookup returns a copy of cached bytes and marks them recently used.
func (c *cached) lookup(d content.Digest) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byDigest[d]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	data := el.Value.(*cacheEntry).data
	out := make([]byte, len(data))
	copy(out, data)
	return out, true
}

func (c *cached) add(d content.Digest, data []byte) {
	n := int64(len(data))
	if n > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byDigest[d]; ok { // a concurrent Get got here first
		c.order.MoveToFront(el)
		return
	}
	c.byDigest[d] = c.order.PushFront(&cacheEntry{digest: d, data: data})
	c.size += n
	for c.size > c.max {
		oldest := c.order.Back()
		e := oldest.Value.(*cacheEntry)
		c.order.Remove(oldest)
		delete(c.byDigest, e.digest)
		c.size -= int64(len(e.data))
	}
}
