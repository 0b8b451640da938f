// Package retention is the blob collector: it deletes blobs that no durable
// holder protects and that nobody has put or admitted within the grace
// period. The dead predicate lives in each store (store.Collectable); this
// package pages through the catalogs, bounds the work of a pass, and deletes
// catalog rows before their object bodies.
package retention

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/objstore"
	"github.com/cairn-agents/cairn/store"
)

// Bounds of a pass.
const (
	PageSize        = 1024
	MaxRowsPerPass  = 100_000
	DefaultGrace    = 7 * 24 * time.Hour
	DefaultDeadline = 5 * time.Minute
)

// Universe is one universe's catalog.
type Universe struct {
	Name  string
	Store store.Collectable
}

// Stats describe one pass.
type Stats struct {
	UniversesScanned int `json:"universesScanned"`
	// BlobsStored is how many blobs the universes scanned held when the
	// pass began (as storage/report counts them), with Options.CountStored;
	// the pass examines only those touched before the grace (RowsScanned).
	BlobsStored    int64 `json:"blobsStored,omitempty"`
	RowsScanned    int64 `json:"rowsScanned"`
	Candidates     int64 `json:"candidates"`
	CandidateBytes int64 `json:"candidateBytes"` // the candidates' sizes

	RowsDeleted     int64 `json:"rowsDeleted"`
	BytesFreed      int64 `json:"bytesFreed"`
	ObjectsDeleted  int64 `json:"objectsDeleted"`
	ObjectErrors    int64 `json:"objectErrors"`
	HolderConflicts int64 `json:"holderConflicts"`
	LeaderBusy      bool  `json:"leaderBusy"`
}

// Leader elects one collector among processes sharing a store.
type Leader interface {
	// Lead reports whether this process leads now, acquiring leadership
	// when nobody holds it.
	Lead(ctx context.Context) (bool, error)
}

// Collector runs passes. Its fields are read at each pass; set them before
// the first one. Safe for concurrent use (passes are serialised).
type Collector struct {
	// Universes lists the catalogs to collect.
	Universes func(ctx context.Context) ([]Universe, error)
	// Leader, when set, must be led before each universe.
	Leader Leader
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Deadline is the soft time budget of a pass (DefaultDeadline when 0):
	// no page starts after it.
	Deadline time.Duration
	// PageSize and MaxRows override the bounds (at most PageSize and
	// MaxRowsPerPass), for tests.
	PageSize, MaxRows int
	Logger            *slog.Logger
	// OnPass, when set, hears each scheduled pass's stats or error (Run),
	// for metrics; a pass another process led is not one of them.
	OnPass func(Stats, error)
	// AfterScan, for tests, runs between a page's scan and its delete.
	AfterScan func(universe string, candidates []content.Digest)

	mu    sync.Mutex
	start int
}

// Options of one pass.
type Options struct {
	// Grace: blobs touched less than Grace ago are kept.
	Grace time.Duration
	// DryRun counts what would be deleted without deleting or moving cursors.
	DryRun bool
	// CountStored fills Stats.BlobsStored, a count of every blob of each
	// universe scanned: for a person's summary (cairn gc), not for the
	// background passes, where it would be a full count each time.
	CountStored bool
}

// constants are the pinned blobs, never collected.
var constants = func() map[content.Digest]bool {
	m := map[content.Digest]bool{}
	for _, b := range core.ConstantBlobs() {
		m[content.Sum(b)] = true
	}
	return m
}()

// Collect runs one pass over every universe, starting from a universe that
// rotates between passes and resuming each universe where its last bounded
// pass stopped.
func (c *Collector) Collect(ctx context.Context, opt Options) (Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if opt.Grace < 0 {
		opt.Grace = 0
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	deadline := c.Deadline
	if deadline <= 0 {
		deadline = DefaultDeadline
	}
	page := PageSize
	if c.PageSize > 0 && c.PageSize < page {
		page = c.PageSize
	}
	maxRows := MaxRowsPerPass
	if c.MaxRows > 0 && c.MaxRows < maxRows {
		maxRows = c.MaxRows
	}
	var st Stats
	us, err := c.Universes(ctx)
	if err != nil {
		return st, err
	}
	passStart := now()
	stopAt := passStart.Add(deadline)
	cutoff := passStart.Add(-opt.Grace)
	first := 0
	if len(us) > 0 {
		first = c.start % len(us)
		if !opt.DryRun {
			c.start = first + 1
		}
	}
	for i := range us {
		u := us[(first+i)%len(us)]
		if ctx.Err() != nil || now().After(stopAt) {
			break
		}
		if c.Leader != nil {
			ok, err := c.Leader.Lead(ctx)
			if err != nil {
				return st, err
			}
			if !ok {
				st.LeaderBusy = true
				return st, nil
			}
		}
		cursor, err := u.Store.LoadBlobCursor(ctx)
		if err != nil {
			log.Error("retention: loading the cursor failed; skipping the universe", "universe", u.Name, "err", err)
			continue
		}
		st.UniversesScanned++
		if opt.CountStored {
			if counted, ok := u.Store.(interface {
				Usage(context.Context) (blob.Usage, error)
			}); ok {
				if use, err := counted.Usage(ctx); err == nil {
					st.BlobsStored += use.Blobs
				}
			}
		}
		scanned := 0
		done := false
		for scanned < maxRows && ctx.Err() == nil && !now().After(stopAt) {
			limit := min(page, maxRows-scanned)
			rows, err := u.Store.ScanBlobs(ctx, cursor, cutoff, limit)
			if err != nil {
				log.Error("retention: scan failed", "universe", u.Name, "err", err)
				break
			}
			scanned += len(rows)
			st.RowsScanned += int64(len(rows))
			var cands []content.Digest
			for _, r := range rows {
				if !r.Held && !constants[r.Digest] {
					cands = append(cands, r.Digest)
					st.CandidateBytes += r.Size
				}
			}
			st.Candidates += int64(len(cands))
			if !opt.DryRun && len(cands) > 0 {
				if c.AfterScan != nil {
					c.AfterScan(u.Name, cands)
				}
				if !c.delete(ctx, log, u, cands, cutoff, &st) {
					// A holder conflict or failure: skip the universe for this
					// pass; the cursor stays before this page to look again.
					break
				}
			}
			if len(rows) > 0 {
				last := rows[len(rows)-1]
				cursor = store.BlobCursor{TouchedAt: last.TouchedAt, Digest: last.Digest}
			}
			if len(rows) < limit {
				done = true
				break
			}
		}
		if !opt.DryRun {
			if done {
				cursor = store.BlobCursor{} // the next pass starts over
			}
			if err := u.Store.SaveBlobCursor(context.WithoutCancel(ctx), cursor); err != nil {
				log.Error("retention: saving the cursor failed", "universe", u.Name, "err", err)
			}
		}
	}
	return st, ctx.Err()
}

// delete removes the rows still dead, then their objects; it reports
// whether the universe's pass may go on.
func (c *Collector) delete(ctx context.Context, log *slog.Logger, u Universe, cands []content.Digest, cutoff time.Time, st *Stats) bool {
	deleted, err := u.Store.DeleteDeadBlobs(ctx, cands, cutoff)
	if errors.Is(err, store.ErrHolderConflict) {
		st.HolderConflicts++
		log.Info("retention: holder conflict; skipping the universe for this pass", "universe", u.Name, "err", err)
		return false
	}
	if err != nil {
		log.Error("retention: delete failed", "universe", u.Name, "err", err)
		return false
	}
	for _, d := range deleted {
		st.RowsDeleted++
		st.BytesFreed += d.Size
		if d.ObjectKey == "" {
			continue
		}
		// The row is gone: the object is nobody's (its key names one upload).
		err := u.Store.DeleteObject(context.WithoutCancel(ctx), d.ObjectKey)
		if err == nil || errors.Is(err, objstore.ErrNotFound) {
			st.ObjectsDeleted++
			continue
		}
		st.ObjectErrors++
		log.Error("retention: deleting an object failed; it is orphaned", "universe", u.Name, "digest", d.Digest, "key", d.ObjectKey, "err", err)
	}
	return true
}

// Single returns the Universes function of one catalog.
func Single(name string, s store.Collectable) func(context.Context) ([]Universe, error) {
	return func(context.Context) ([]Universe, error) { return []Universe{{Name: name, Store: s}}, nil }
}
