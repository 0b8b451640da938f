package api

import (
	"context"
	"sync"
	"time"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// Storage methods: where a universe's bytes go, and why one blob is kept.
// Both read the universe of the caller (its API key's in the hosted mode)
// and change nothing.
const (
	// MethodStorageReport reports logical bytes (each session's roots,
	// a blob counted once per session rooting it) against physical bytes
	// (each stored blob once, split inline / object storage), for the
	// universe and per session.
	MethodStorageReport = "storage/report"
	// MethodBlobsHolders lists what keeps a blob from the collector and
	// when it becomes eligible once nothing does.
	MethodBlobsHolders = "blobs/holders"
)

// Bounds of the storage methods.
const (
	defaultStorageSessions = 100
	maxStorageSessions     = 1000
	defaultHolders         = 100
	maxHolders             = 1000
)

// StorageReportParams select one session (SessionID) or a page of sessions
// in id order: those after After (the previous page's cursor), at most
// Limit (0: 100; at most 1000).
type StorageReportParams struct {
	SessionID string `json:"sessionId,omitempty"`
	After     string `json:"after,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

// StorageReportResult is {universe?, sessions, cursor?}. Universe totals the
// whole catalog and is present only on a listing (without sessionId): it
// reads every catalog row of the universe once. Each session is
// {sessionId, roots, logicalBytes, sharedRoots, sharedBytes, checkpoints,
// checkpointBytes, events, eventBytes} (see store.SessionUsage); cursor is
// after for the next page, absent on the last.
type StorageReportResult struct {
	Universe *store.UniverseUsage `json:"universe,omitempty"`
	Sessions []store.SessionUsage `json:"sessions"`
	Cursor   string               `json:"cursor,omitempty"`
}

// BlobHoldersParams name a blob of the universe. GraceMs is the collector's
// grace to compute eligibility with (default: the server's --gc-grace); Limit bounds each holder list
// (0: 100; at most 1000).
type BlobHoldersParams struct {
	Ref     RefParam `json:"ref"`
	GraceMs *int64   `json:"graceMs,omitempty"`
	Limit   int      `json:"limit,omitempty"`
}

// BlobHoldersResult describes a blob and its holders. Each list is sorted
// and cut at the limit, its *Truncated flag set when more exist. Held is
// true when any holder or the constant pin keeps the blob; EligibleAtMs is
// TouchedAtMs + GraceMs, after which an unheld blob may be collected, and
// Collectable says a pass starting now would collect it.
//
// The catalog keeps digests, not media types: Ref has the media type the
// params gave (application/octet-stream for a digest string), Parents have
// application/octet-stream.
type BlobHoldersResult struct {
	Ref          content.ContentRef `json:"ref"`
	Size         int64              `json:"size"`
	Storage      string             `json:"storage"` // "inline" or "object"
	TouchedAtMs  int64              `json:"touchedAtMs"`
	GraceMs      int64              `json:"graceMs"`
	EligibleAtMs int64              `json:"eligibleAtMs"`
	Held         bool               `json:"held"`
	Collectable  bool               `json:"collectable"`
	// Constant: one of the pinned constant blobs, never collected.
	Constant             bool                     `json:"constant"`
	Sessions             []string                 `json:"sessions"`
	SessionsTruncated    bool                     `json:"sessionsTruncated,omitempty"`
	Checkpoints          []store.CheckpointHolder `json:"checkpoints"`
	CheckpointsTruncated bool                     `json:"checkpointsTruncated,omitempty"`
	Snapshot             bool                     `json:"snapshot"`
	Workspaces           []string                 `json:"workspaces"`
	WorkspacesTruncated  bool                     `json:"workspacesTruncated,omitempty"`
	Parents              []content.ContentRef     `json:"parents"`
	ParentsTruncated     bool                     `json:"parentsTruncated,omitempty"`
}

// Storage kinds of BlobHoldersResult.Storage.
const (
	StorageInline = "inline"
	StorageObject = "object"
)

func storageRoutes() map[string]method {
	return map[string]method{
		MethodStorageReport: handler(call.storageReport).errs(KindNotFound, KindUnsupported),
		MethodBlobsHolders:  handler(call.blobHolders).errs(KindNotFound, KindUnsupported),
	}
}

func (c call) reporter() (store.StorageReporter, error) {
	r, ok := c.host.Log().(store.StorageReporter)
	if !ok {
		return nil, unsupported("this server's store cannot report storage")
	}
	return r, nil
}

func (c call) storageReport(ctx context.Context, p StorageReportParams) (StorageReportResult, error) {
	if p.Limit < 0 {
		return StorageReportResult{}, invalidParams("limit must not be negative")
	}
	if p.SessionID != "" && (p.After != "" || p.Limit != 0) {
		return StorageReportResult{}, invalidParams("sessionId reports one session: it takes no after or limit")
	}
	r, err := c.reporter()
	if err != nil {
		return StorageReportResult{}, err
	}
	if p.SessionID != "" {
		u, err := r.SessionUsageOf(ctx, p.SessionID)
		if err != nil {
			return StorageReportResult{}, err
		}
		return StorageReportResult{Sessions: []store.SessionUsage{u}}, nil
	}
	limit := p.Limit
	if limit == 0 {
		limit = defaultStorageSessions
	}
	limit = min(limit, maxStorageSessions)
	// One past the page tells whether another follows, without a count.
	list, err := r.SessionUsage(ctx, p.After, limit+1)
	if err != nil {
		return StorageReportResult{}, err
	}
	u, err := r.UniverseUsage(ctx)
	if err != nil {
		return StorageReportResult{}, err
	}
	out := StorageReportResult{Universe: &u, Sessions: list}
	if len(list) > limit {
		out.Sessions = list[:limit]
		out.Cursor = list[limit-1].SessionID
	}
	if out.Sessions == nil {
		out.Sessions = []store.SessionUsage{}
	}
	return out, nil
}

// constantBlobs are the digests the collector pins.
var constantBlobs = sync.OnceValue(func() map[content.Digest]bool {
	m := map[content.Digest]bool{}
	for _, b := range core.ConstantBlobs() {
		m[content.Sum(b)] = true
	}
	return m
})

func (c call) blobHolders(ctx context.Context, p BlobHoldersParams) (BlobHoldersResult, error) {
	if p.Ref.IsZero() {
		return BlobHoldersResult{}, invalidParams("ref is required")
	}
	if p.Limit < 0 {
		return BlobHoldersResult{}, invalidParams("limit must not be negative")
	}
	grace := c.grace
	if p.GraceMs != nil {
		if *p.GraceMs < 0 {
			return BlobHoldersResult{}, invalidParams("graceMs must not be negative")
		}
		grace = time.Duration(*p.GraceMs) * time.Millisecond
	}
	limit := p.Limit
	if limit == 0 {
		limit = defaultHolders
	}
	limit = min(limit, maxHolders)
	r, err := c.reporter()
	if err != nil {
		return BlobHoldersResult{}, err
	}
	h, err := r.BlobHolders(ctx, p.Ref.Digest, limit)
	if err != nil {
		return BlobHoldersResult{}, err // a *blob.NotFoundError is not_found
	}
	out := BlobHoldersResult{
		Ref: p.Ref.Ref(unknownMediaType), Size: h.Size, Storage: StorageInline,
		TouchedAtMs: h.TouchedAt.UnixMilli(), GraceMs: grace.Milliseconds(),
		Constant: constantBlobs()[h.Digest],
		Sessions: nonNil(h.Sessions), SessionsTruncated: h.SessionsTruncated,
		Checkpoints: nonNil(h.Checkpoints), CheckpointsTruncated: h.CheckpointsTruncated,
		Snapshot:   h.Snapshot,
		Workspaces: nonNil(h.Workspaces), WorkspacesTruncated: h.WorkspacesTruncated,
		Parents: unknownRefs(h.Parents), ParentsTruncated: h.ParentsTruncated,
	}
	if h.Object {
		out.Storage = StorageObject
	}
	eligible := h.TouchedAt.Add(grace)
	out.EligibleAtMs = eligible.UnixMilli()
	out.Held = h.Held() || out.Constant
	// The collector's cutoff is strict (touched before now - grace).
	out.Collectable = !out.Held && time.UnixMilli(c.host.NowMs()).After(eligible)
	return out, nil
}

// unknownMediaType is the media type of a ref whose media type the server
// does not know: bytes of no stated type.
const unknownMediaType = "application/octet-stream"

// unknownRefs are refs of digests whose media types the server does not keep.
func unknownRefs(ds []content.Digest) []content.ContentRef {
	out := make([]content.ContentRef, len(ds))
	for i, d := range ds {
		out[i] = content.ContentRef{Digest: d, MediaType: unknownMediaType}
	}
	return out
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// StorageReport calls storage/report.
func (c *Client) StorageReport(ctx context.Context, p StorageReportParams) (StorageReportResult, error) {
	var out StorageReportResult
	return out, c.Call(ctx, MethodStorageReport, p, &out)
}

// BlobHolders calls blobs/holders.
func (c *Client) BlobHolders(ctx context.Context, p BlobHoldersParams) (BlobHoldersResult, error) {
	var out BlobHoldersResult
	return out, c.Call(ctx, MethodBlobsHolders, p, &out)
}
