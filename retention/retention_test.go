package retention_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/objstore"
	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/store"
)

// rows is a Collectable over a fixed list of unheld rows, one per minute,
// that records what a collector does to it. Deleted rows leave the list.
type rows struct {
	name       string
	list       []store.CatalogRow
	keys       map[content.Digest]string
	cursor     store.BlobCursor
	scans      int
	deletes    int
	conflictAt int // the delete call (1-based) that reports a holder conflict
	objectErr  map[string]error
	objects    []string
	order      *[]string // universes in the order they were scanned
}

func newRows(name string, n int, order *[]string) *rows {
	r := &rows{name: name, keys: map[content.Digest]string{}, objectErr: map[string]error{}, order: order}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		d := content.Sum(fmt.Appendf(nil, "%s %d", name, i))
		r.list = append(r.list, store.CatalogRow{Digest: d, Size: 10, TouchedAt: base.Add(time.Duration(i) * time.Minute)})
	}
	return r
}

func (r *rows) ScanBlobs(_ context.Context, after store.BlobCursor, cutoff time.Time, limit int) ([]store.CatalogRow, error) {
	r.scans++
	if r.order != nil {
		*r.order = append(*r.order, r.name)
	}
	var out []store.CatalogRow
	for _, row := range r.list {
		if row.TouchedAt.Before(cutoff) && after.Before(row.TouchedAt, row.Digest) && len(out) < limit {
			out = append(out, row)
		}
	}
	return out, nil
}

func (r *rows) DeleteDeadBlobs(_ context.Context, ds []content.Digest, _ time.Time) ([]store.DeletedBlob, error) {
	r.deletes++
	if r.deletes == r.conflictAt {
		return nil, fmt.Errorf("fake: %w", store.ErrHolderConflict)
	}
	var out []store.DeletedBlob
	r.list = slices.DeleteFunc(r.list, func(row store.CatalogRow) bool {
		if !slices.Contains(ds, row.Digest) {
			return false
		}
		out = append(out, store.DeletedBlob{Digest: row.Digest, Size: row.Size, ObjectKey: r.keys[row.Digest]})
		return true
	})
	return out, nil
}

func (r *rows) DeleteObject(_ context.Context, key string) error {
	r.objects = append(r.objects, key)
	return r.objectErr[key]
}

func (r *rows) LoadBlobCursor(context.Context) (store.BlobCursor, error) { return r.cursor, nil }

func (r *rows) SaveBlobCursor(_ context.Context, c store.BlobCursor) error {
	r.cursor = c
	return nil
}

func collector(us ...*rows) *retention.Collector {
	return &retention.Collector{
		Universes: func(context.Context) ([]retention.Universe, error) {
			out := make([]retention.Universe, len(us))
			for i, u := range us {
				out[i] = retention.Universe{Name: u.name, Store: u}
			}
			return out, nil
		},
		Now:    func() time.Time { return time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC) },
		Logger: slog.New(slog.DiscardHandler),
	}
}

func collect(t *testing.T, c *retention.Collector) retention.Stats {
	t.Helper()
	st, err := c.Collect(context.Background(), retention.Options{Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestPassIsBoundedPerUniverseAndResumes(t *testing.T) {
	u := newRows("u", 25, nil)
	c := collector(u)
	c.PageSize, c.MaxRows = 4, 10
	st := collect(t, c)
	if st.RowsScanned != 10 || st.RowsDeleted != 10 || u.scans != 3 {
		t.Fatalf("first pass %+v in %d scans; want 10 rows in pages of at most 4 (3 scans)", st, u.scans)
	}
	if u.cursor.IsZero() {
		t.Fatal("a pass cut by the row bound left no cursor")
	}
	st = collect(t, c)
	st2 := collect(t, c)
	if st.RowsDeleted != 10 || st2.RowsDeleted != 5 || len(u.list) != 0 || !u.cursor.IsZero() {
		t.Fatalf("passes 2 and 3 deleted %d and %d (left %d, cursor %+v); want 10, 5, none left, cursor reset",
			st.RowsDeleted, st2.RowsDeleted, len(u.list), u.cursor)
	}
}

func TestBoundsCannotBeRaisedAboveTheSpec(t *testing.T) {
	u := newRows("u", 3000, nil)
	c := collector(u)
	c.PageSize, c.MaxRows = 5000, 1_000_000
	collect(t, c)
	if u.scans != 3 { // 1024 + 1024 + 952
		t.Fatalf("%d scans of 3,000 rows; pages must stay at most %d rows", u.scans, retention.PageSize)
	}
}

func TestStartingUniverseRotates(t *testing.T) {
	var order []string
	a, b, cc := newRows("a", 1, &order), newRows("b", 1, &order), newRows("c", 1, &order)
	c := collector(a, b, cc)
	var firsts []string
	for range 4 {
		order = nil
		collect(t, c)
		firsts = append(firsts, order[0])
	}
	if !slices.Equal(firsts, []string{"a", "b", "c", "a"}) {
		t.Fatalf("passes started at %v, want each universe in turn", firsts)
	}
	// A dry run neither deletes nor moves the rotation.
	order = nil
	a2 := newRows("a", 1, &order)
	d := collector(a2, newRows("b", 1, &order))
	for range 2 {
		order = nil
		if _, err := d.Collect(context.Background(), retention.Options{Grace: time.Hour, DryRun: true}); err != nil {
			t.Fatal(err)
		}
		if order[0] != "a" || len(a2.list) != 1 {
			t.Fatalf("dry run started at %s and left %d rows", order[0], len(a2.list))
		}
	}
}

func TestSoftDeadlineStopsStartingPages(t *testing.T) {
	u := newRows("u", 20, nil)
	c := collector(u)
	c.PageSize = 2
	now := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Now = func() time.Time {
		now = now.Add(time.Second) // every look at the clock costs a second
		return now
	}
	c.Deadline = 5 * time.Second
	st := collect(t, c)
	if st.RowsScanned == 0 || st.RowsScanned >= 20 {
		t.Fatalf("scanned %d of 20 rows under a 5 s budget at a second a look", st.RowsScanned)
	}
	if u.cursor.IsZero() {
		t.Fatal("a pass cut by the deadline left no cursor to resume from")
	}
}

func TestHolderConflictSkipsTheUniverseForThePass(t *testing.T) {
	var order []string
	a, b := newRows("a", 6, &order), newRows("b", 3, &order)
	a.conflictAt = 1
	c := collector(a, b)
	c.PageSize = 2
	st := collect(t, c)
	if st.HolderConflicts != 1 || a.scans != 1 || len(a.list) != 6 {
		t.Fatalf("stats %+v, %d scans of a, %d rows left; want one conflict ending a's pass untouched", st, a.scans, len(a.list))
	}
	if len(b.list) != 0 {
		t.Fatalf("the conflict in a stopped b too (%d rows left)", len(b.list))
	}
	if !a.cursor.IsZero() {
		t.Fatalf("the conflicting page was skipped by the cursor %+v; it must be looked at again", a.cursor)
	}
	collect(t, c)
	if len(a.list) != 0 {
		t.Fatalf("%d rows of a left after the next pass", len(a.list))
	}
}

func TestObjectFailuresAreCountedAndLogged(t *testing.T) {
	u := newRows("u", 3, nil)
	u.keys[u.list[0].Digest] = "obj-gone"
	u.keys[u.list[1].Digest] = "obj-broken"
	u.objectErr["obj-gone"] = fmt.Errorf("fake: %w", objstore.ErrNotFound)
	u.objectErr["obj-broken"] = errors.New("fake: disk on fire")
	var logs bytes.Buffer
	c := collector(u)
	c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	st := collect(t, c)
	if st.RowsDeleted != 3 || st.BytesFreed != 30 || st.ObjectsDeleted != 1 || st.ObjectErrors != 1 {
		t.Fatalf("stats %+v; want 3 rows, an object already gone counted as deleted, one object error", st)
	}
	if !slices.Equal(u.objects, []string{"obj-gone", "obj-broken"}) {
		t.Fatalf("object deletes %v; the inline row has none", u.objects)
	}
	if !strings.Contains(logs.String(), "obj-broken") || !strings.Contains(logs.String(), "disk on fire") {
		t.Fatalf("the object failure was not logged: %s", logs.String())
	}
}
