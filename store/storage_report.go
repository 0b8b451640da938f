package store

import (
	"context"
	"time"

	"github.com/cairn-agents/cairn/content"
)

// StorageReporter answers an operator's two questions about a universe's
// blob catalog: where do the bytes go, and why is this blob still here.
//
// "Physical" bytes are the catalog's: each stored blob once, split by where
// its body lives (inline in the catalog row, or in object storage).
// "Logical" bytes count a blob once per session that roots it: the
// session_roots table records one row per (session, blob), so a blob
// referenced by ten events of one session counts once for that session,
// and twice if a second session roots it too. Event-level multiplicity is
// not recorded anywhere durable, and is not reported. A history fork roots
// only the refs of its own events: its inherited prefix stays counted under
// the session it was forked from.
type StorageReporter interface {
	// UniverseUsage totals the universe's catalog, roots, checkpoints and
	// events.
	// It aggregates over every catalog row of the universe once (sizes and
	// storage kind only, never bodies).
	UniverseUsage(ctx context.Context) (UniverseUsage, error)
	// SessionUsage reports up to limit sessions (all when limit <= 0) whose
	// ids sort after afterID, in id order; its cost follows the roots and
	// checkpoints of those sessions only.
	SessionUsage(ctx context.Context, afterID string, limit int) ([]SessionUsage, error)
	// SessionUsageOf reports one session; ErrSessionNotFound when the
	// universe has no such session.
	SessionUsageOf(ctx context.Context, sessionID string) (SessionUsage, error)
	// BlobHolders describes the catalog row of d and what holds it, each
	// list sorted and cut at limit entries (uncut when limit <= 0) with its
	// Truncated flag set when more exist. A digest the universe lacks is a
	// *blob.NotFoundError.
	BlobHolders(ctx context.Context, d content.Digest, limit int) (BlobHolders, error)
}

// UniverseUsage is a universe's storage at one point in time.
type UniverseUsage struct {
	// Blobs and PhysicalBytes count the catalog: every stored blob once.
	Blobs         int64 `json:"blobs"`
	PhysicalBytes int64 `json:"physicalBytes"`
	// The catalog split by where bodies live; inline + object = physical.
	InlineBlobs int64 `json:"inlineBlobs"`
	InlineBytes int64 `json:"inlineBytes"`
	ObjectBlobs int64 `json:"objectBlobs"`
	ObjectBytes int64 `json:"objectBytes"`
	// Sessions in the universe, their session-root rows, and the sum of the
	// sizes those rows name (a blob rooted by n sessions counts n times).
	Sessions     int64 `json:"sessions"`
	Roots        int64 `json:"roots"`
	LogicalBytes int64 `json:"logicalBytes"`
	// Reducer checkpoints and the sizes of their blobs: each one's index
	// and the pages and chunks it reaches, every blob once.
	Checkpoints     int64 `json:"checkpoints"`
	CheckpointBytes int64 `json:"checkpointBytes"`
	// Events in the universe's logs and the bytes the store keeps them in
	// (compressed where the store compresses them).
	Events     int64 `json:"events"`
	EventBytes int64 `json:"eventBytes"`
}

// SessionUsage is one session's share of the catalog.
type SessionUsage struct {
	SessionID string `json:"sessionId"`
	// Roots is the number of distinct blobs the session's own events
	// reference; LogicalBytes their total size.
	Roots        int64 `json:"roots"`
	LogicalBytes int64 `json:"logicalBytes"`
	// SharedRoots and SharedBytes are the part of Roots that at least one
	// other session roots too. LogicalBytes - SharedBytes is what this
	// session alone roots: the most deleting it could release, unless a
	// checkpoint, snapshot, workspace or parent blob still holds it.
	SharedRoots int64 `json:"sharedRoots"`
	SharedBytes int64 `json:"sharedBytes"`
	// The session's reducer checkpoints and the sizes of their blobs:
	// their indexes and the pages and chunks they reach, every blob once
	// (consecutive checkpoints share most chunks).
	Checkpoints     int64 `json:"checkpoints"`
	CheckpointBytes int64 `json:"checkpointBytes"`
	// The session's own events (a fork's inherited prefix counts under
	// the session it was forked from) and the bytes the store keeps them in.
	Events     int64 `json:"events"`
	EventBytes int64 `json:"eventBytes"`
}

// BlobHolders is a blob's catalog row and the durable holders that keep it
// from the collector. The pinned constant blobs are kept by the collector
// itself and are not reported here.
type BlobHolders struct {
	Digest    content.Digest
	Size      int64
	Object    bool // the body lives in object storage, not inline
	TouchedAt time.Time

	Sessions             []string // sessions that root it, by id
	SessionsTruncated    bool
	Checkpoints          []CheckpointHolder // by session id, then seq
	CheckpointsTruncated bool
	Snapshot             bool     // a snapshot record names it (at most one per digest)
	Workspaces           []string // workspaces whose head it is, by name
	WorkspacesTruncated  bool
	Parents              []content.Digest // blobs with an edge to it, sorted
	ParentsTruncated     bool
}

// CheckpointHolder is a reducer checkpoint whose blob is the one described.
type CheckpointHolder struct {
	SessionID string `json:"sessionId"`
	Seq       int64  `json:"seq"`
}

// Held reports whether any durable holder protects the blob.
func (h BlobHolders) Held() bool {
	return len(h.Sessions) > 0 || len(h.Checkpoints) > 0 || h.Snapshot || len(h.Workspaces) > 0 || len(h.Parents) > 0
}

// CutHolders trims a holder list read with up to limit+1 rows to limit and
// reports whether it had more. Backends read one row past the limit so the
// truncated flag costs no count.
func CutHolders[T any](list []T, limit int) ([]T, bool) {
	if limit > 0 && len(list) > limit {
		return list[:limit], true
	}
	return list, false
}
