package blob

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/cairn-agents/cairn/content"
)

// Memory is a Store held in process memory, for tests and ephemeral sessions.
// It is safe for concurrent use.
type Memory struct {
	mu    sync.RWMutex
	blobs map[content.Digest][]byte
	bytes int64
	// touched is each blob's last put, the retention grace clock.
	touched map[content.Digest]time.Time
	now     func() time.Time
}

// NewMemory returns an empty memory store.
func NewMemory() *Memory {
	return &Memory{blobs: map[content.Digest][]byte{}, touched: map[content.Digest]time.Time{}, now: time.Now}
}

// SetClock replaces time.Now as the clock of touch times.
func (m *Memory) SetClock(now func() time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = now
}

// MemoryEntry is a blob of a Memory as retention scans it.
type MemoryEntry struct {
	Digest    content.Digest
	Size      int64
	TouchedAt time.Time
}

// Entries returns every blob with its size and last put time, unordered.
func (m *Memory) Entries() []MemoryEntry {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]MemoryEntry, 0, len(m.blobs))
	for d, data := range m.blobs {
		out = append(out, MemoryEntry{Digest: d, Size: int64(len(data)), TouchedAt: m.touched[d]})
	}
	return out
}

// DeleteIf deletes d when it exists and dead(its last put time) holds, in
// one step with respect to Put, and returns its size.
func (m *Memory) DeleteIf(d content.Digest, dead func(touchedAt time.Time) bool) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.blobs[d]
	if !ok || !dead(m.touched[d]) {
		return 0, false
	}
	delete(m.blobs, d)
	delete(m.touched, d)
	m.bytes -= int64(len(data))
	return int64(len(data)), true
}

var _ Store = (*Memory)(nil)

// Put stores a private copy of data so later changes to the caller's slice
// cannot alter stored bytes.
func (m *Memory) Put(ctx context.Context, data []byte) (content.Digest, error) {
	if err := ctx.Err(); err != nil {
		return content.Digest{}, err
	}
	d := content.Sum(data)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.blobs[d]; !ok {
		m.blobs[d] = slices.Clone(data)
		m.bytes += int64(len(data))
	}
	// A put of known bytes renews their grace; time never moves backwards.
	if now := m.now(); now.After(m.touched[d]) {
		m.touched[d] = now
	}
	return d, nil
}

// Get returns a copy of the bytes, verified against d.
func (m *Memory) Get(ctx context.Context, d content.Digest) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	data, ok := m.blobs[d]
	m.mu.RUnlock()
	if !ok {
		return nil, &NotFoundError{Digest: d}
	}
	out := make([]byte, len(data))
	copy(out, data)
	if err := Verify(d, out); err != nil {
		return nil, err
	}
	return out, nil
}

// GetMany implements ManyGetter: every digest of ds it holds.
func (m *Memory) GetMany(ctx context.Context, ds []content.Digest) (map[content.Digest][]byte, error) {
	out := make(map[content.Digest][]byte, len(ds))
	for _, d := range ds {
		data, err := m.Get(ctx, d)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[d] = data
	}
	return out, nil
}

// Missing returns the absent digests of ds, sorted and without duplicates.
func (m *Memory) Missing(ctx context.Context, ds []content.Digest) ([]content.Digest, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []content.Digest
	for _, d := range ds {
		if _, ok := m.blobs[d]; !ok {
			out = append(out, d)
		}
	}
	return sortUnique(out), nil
}

// Touch renews the touch time of the held digests of ds and returns the
// absent ones, sorted and without duplicates.
func (m *Memory) Touch(ctx context.Context, ds []content.Digest) ([]content.Digest, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var out []content.Digest
	for _, d := range ds {
		if _, ok := m.blobs[d]; !ok {
			out = append(out, d)
		} else if now.After(m.touched[d]) {
			m.touched[d] = now
		}
	}
	return sortUnique(out), nil
}

// Usage reports the number of blobs and their total size.
func (m *Memory) Usage(ctx context.Context) (Usage, error) {
	if err := ctx.Err(); err != nil {
		return Usage{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return Usage{Blobs: int64(len(m.blobs)), Bytes: m.bytes}, nil
}

// sortUnique sorts ds in place and drops repeats.
func sortUnique(ds []content.Digest) []content.Digest {
	content.SortDigests(ds)
	return slices.Compact(ds)
}
