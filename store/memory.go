package store

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// Memory is a SessionLog held in process memory, for tests. It checks refs
// against the blob store it was given. Safe for concurrent use.
type Memory struct {
	blobs blob.Store

	mu       sync.RWMutex
	sessions map[string]*memSession
	// blobCursor is where the last bounded collector pass stopped.
	blobCursor BlobCursor
	edges      map[content.Digest]map[content.Digest]struct{} // parent → children

	now        func() time.Time
	workspaces map[string]Workspace
	snapshots  map[content.Digest]Snapshot

	checkpoints map[string]map[int64]content.Digest // session → seq → blob
}

type memSession struct {
	events    []core.Event // the session's own events: seqs layout.ForkAt+1…
	layout    Layout
	source    *Source
	lifecycle core.Lifecycle
	roots     map[content.Digest]struct{}
}

var (
	_ SessionLog  = (*Memory)(nil)
	_ Edges       = (*Memory)(nil)
	_ Workspaces  = (*Memory)(nil)
	_ Checkpoints = (*Memory)(nil)
	_ Catalog     = (*Memory)(nil)
)

// MemoryOption configures NewMemory.
type MemoryOption func(*Memory)

// WithMemoryNow replaces time.Now as the clock for workspace and snapshot
// timestamps.
func WithMemoryNow(now func() time.Time) MemoryOption { return func(m *Memory) { m.now = now } }

// NewMemory returns an empty log whose appends require their refs in blobs.
func NewMemory(blobs blob.Store, opts ...MemoryOption) *Memory {
	m := &Memory{
		blobs:      blobs,
		sessions:   map[string]*memSession{},
		edges:      map[content.Digest]map[content.Digest]struct{}{},
		now:        time.Now,
		workspaces: map[string]Workspace{},
		snapshots:  map[content.Digest]Snapshot{},

		checkpoints: map[string]map[int64]content.Digest{},
	}
	for _, opt := range opts {
		opt(m)
	}
	if m.now == nil {
		m.now = time.Now
	}
	return m
}

// Append implements SessionLog.
func (m *Memory) Append(ctx context.Context, sessionID string, expectedHead int64, proposals []core.Proposal) ([]core.Event, error) {
	return m.AppendBatch(ctx, sessionID, expectedHead, proposals, Batch{})
}

// AppendBatch implements BatchAppender: the head and every ref are checked
// first (a ref may name a blob of b), then b is written and the events
// appended, all under the log's lock.
func (m *Memory) AppendBatch(ctx context.Context, sessionID string, expectedHead int64, proposals []core.Proposal, b Batch) ([]core.Event, error) {
	refs, err := PrepareAppend(sessionID, expectedHead, proposals)
	if err != nil {
		return nil, err
	}
	edges, err := prepareMemoryEdges(b.Edges)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[sessionID]
	var head int64
	if s != nil {
		head = s.lifecycle.Head
	}
	if head != expectedHead {
		return nil, &HeadConflictError{SessionID: sessionID, Expected: expectedHead, Actual: head}
	}
	// Checked under the log's lock so the check and the commit are one step
	// as far as other appenders are concerned.
	if err := m.requireLocked(ctx, slices.Concat(refs, edges.need), b.Blobs); err != nil {
		return nil, fmt.Errorf("append %s: %w", sessionID, err)
	}
	if err := m.writeLocked(ctx, b, edges); err != nil {
		return nil, err
	}
	if s == nil {
		s = &memSession{lifecycle: core.Lifecycle{SessionID: sessionID}, roots: map[content.Digest]struct{}{}}
		m.sessions[sessionID] = s
	}
	events := Commit(head, proposals)
	for _, ev := range events {
		s.events = append(s.events, CloneEvent(ev))
	}
	for _, d := range refs {
		s.roots[d] = struct{}{}
	}
	s.lifecycle = Project(s.lifecycle, sessionID, events)
	return events, nil
}

// ReadAfter implements SessionLog.
func (m *Memory) ReadAfter(ctx context.Context, sessionID string, after int64, limit int) ([]core.Event, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, ok := m.sessions[sessionID]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrSessionNotFound, sessionID)
	}
	return s.layout.ReadAfter(ctx, sessionID, after, limit, m.readRange)
}

// ReadBefore implements SessionLog.
func (m *Memory) ReadBefore(ctx context.Context, sessionID string, before int64, limit int) ([]core.Event, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, ok := m.sessions[sessionID]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrSessionNotFound, sessionID)
	}
	return s.layout.ReadBefore(ctx, sessionID, before, limit, m.readRange)
}

// readRange is the RangeReader of the stored events; the caller holds m.mu.
func (m *Memory) readRange(_ context.Context, owner string, from, to int64, limit int, desc bool) ([]core.Event, error) {
	s, ok := m.sessions[owner]
	if !ok {
		return nil, fmt.Errorf("%w: %s (a fork's source)", ErrSessionNotFound, owner)
	}
	// Own seq n lives at index n-1-base.
	base := s.layout.ForkAt
	n := int64(len(s.events))
	lo := min(max(from-base, 0), n)
	hi := n
	if to >= 0 {
		hi = min(max(to-base, lo), n)
	}
	if limit > 0 && hi-lo > int64(limit) {
		if desc {
			lo = hi - int64(limit)
		} else {
			hi = lo + int64(limit)
		}
	}
	out := cloneEvents(s.events[lo:hi])
	if desc {
		slices.Reverse(out)
	}
	return out, nil
}

// Session implements SessionLog.
func (m *Memory) Session(ctx context.Context, sessionID string) (core.Lifecycle, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, ok := m.sessions[sessionID]
	if !ok {
		return core.Lifecycle{}, fmt.Errorf("%w: %s", ErrSessionNotFound, sessionID)
	}
	return s.lifecycle, nil
}

// Sessions implements SessionLog.
func (m *Memory) Sessions(ctx context.Context, afterID string, limit int) ([]core.Lifecycle, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ids := m.sortedIDs()
	start := sort.SearchStrings(ids, afterID)
	if start < len(ids) && ids[start] == afterID {
		start++
	}
	ids = ids[start:]
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	out := make([]core.Lifecycle, len(ids))
	for i, id := range ids {
		out[i] = m.sessions[id].lifecycle
	}
	return out, nil
}

// Unfinished implements SessionLog.
func (m *Memory) Unfinished(ctx context.Context) ([]string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for _, id := range m.sortedIDs() {
		if m.sessions[id].lifecycle.Unfinished() {
			out = append(out, id)
		}
	}
	return out, nil
}

// Roots returns the sorted digests referenced by the session's events.
func (m *Memory) Roots(ctx context.Context, sessionID string) ([]content.Digest, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, ok := m.sessions[sessionID]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrSessionNotFound, sessionID)
	}
	out := make([]content.Digest, 0, len(s.roots))
	for d := range s.roots {
		out = append(out, d)
	}
	content.SortDigests(out)
	return out, nil
}

// PutEdges implements Edges.
func (m *Memory) PutEdges(ctx context.Context, parent content.Digest, children []content.Digest) error {
	return m.WriteBatch(ctx, Batch{Edges: []Edge{{Parent: parent, Children: children}}})
}

// WriteBatch implements BatchWriter.
func (m *Memory) WriteBatch(ctx context.Context, b Batch) error {
	edges, err := prepareMemoryEdges(b.Edges)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// As in Append, the existence check and the write are one step under the lock.
	if err := m.requireLocked(ctx, edges.need, b.Blobs); err != nil {
		return fmt.Errorf("put edges: %w", err)
	}
	return m.writeLocked(ctx, b, edges)
}

// memoryEdges are a batch's edges checked: each one's children, sorted,
// and every blob they need.
type memoryEdges struct {
	kids [][]content.Digest
	need []content.Digest
}

func prepareMemoryEdges(es []Edge) (memoryEdges, error) {
	out := memoryEdges{kids: make([][]content.Digest, len(es))}
	for i, e := range es {
		kids, need, err := PrepareEdges(e.Parent, e.Children)
		if err != nil {
			return memoryEdges{}, err
		}
		out.kids[i] = kids
		out.need = append(out.need, need...)
	}
	return out, nil
}

// requireLocked fails with a *blob.MissingError when a digest of need is
// neither stored nor one of the bytes of brought.
func (m *Memory) requireLocked(ctx context.Context, need []content.Digest, brought [][]byte) error {
	missing, err := m.blobs.Missing(ctx, need)
	if err != nil {
		return fmt.Errorf("check blobs: %w", err)
	}
	if len(missing) > 0 && len(brought) > 0 {
		have := make(map[content.Digest]bool, len(brought))
		for _, data := range brought {
			have[content.Sum(data)] = true
		}
		missing = slices.DeleteFunc(missing, func(d content.Digest) bool { return have[d] })
	}
	if len(missing) > 0 {
		return &blob.MissingError{Digests: missing}
	}
	return nil
}

// writeLocked stores b's blobs and records its edges.
func (m *Memory) writeLocked(ctx context.Context, b Batch, edges memoryEdges) error {
	for _, data := range b.Blobs {
		if _, err := m.blobs.Put(ctx, data); err != nil {
			return err
		}
	}
	for i, e := range b.Edges {
		set := m.edges[e.Parent]
		if set == nil {
			set = map[content.Digest]struct{}{}
			m.edges[e.Parent] = set
		}
		for _, c := range edges.kids[i] {
			set[c] = struct{}{}
		}
	}
	return nil
}

// Children implements Edges.
func (m *Memory) Children(ctx context.Context, parent content.Digest) ([]content.Digest, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	set := m.edges[parent]
	out := make([]content.Digest, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	content.SortDigests(out)
	return out, nil
}

func (m *Memory) sortedIDs() []string {
	ids := make([]string, 0, len(m.sessions))
	for id := range m.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func cloneEvents(evs []core.Event) []core.Event {
	out := make([]core.Event, len(evs))
	for i, ev := range evs {
		out[i] = CloneEvent(ev)
	}
	return out
}
