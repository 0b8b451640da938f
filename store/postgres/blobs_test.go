package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/blob/blobtest"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/objstore"
	"github.com/cairn-agents/cairn/store/postgres"
)

type blobRow struct {
	size       int64
	inline     []byte
	objectKey  *string
	created    time.Time
	touched    time.Time
	storedSize int64 // length(inline), -1 when not inline
}

func readRow(t testing.TB, conn *pgx.Conn, universe string, d content.Digest) blobRow {
	t.Helper()
	var r blobRow
	err := conn.QueryRow(context.Background(), `SELECT size, inline, object_key, created_at, touched_at,
		coalesce(length(inline), -1) FROM blobs WHERE universe = $1 AND digest = $2`, universe, d[:]).
		Scan(&r.size, &r.inline, &r.objectKey, &r.created, &r.touched, &r.storedSize)
	if err != nil {
		t.Fatalf("read blobs row %s/%s: %v", universe, d, err)
	}
	return r
}

func countRows(t testing.TB, conn *pgx.Conn, query string, args ...any) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func mustPut(t testing.TB, s *postgres.Store, data []byte) content.Digest {
	t.Helper()
	d, err := s.Put(context.Background(), data)
	if err != nil {
		t.Fatalf("Put(%d bytes): %v", len(data), err)
	}
	return d
}

func mustGet(t testing.TB, s *postgres.Store, d content.Digest, want []byte) {
	t.Helper()
	got, err := s.Get(context.Background(), d)
	if err != nil {
		t.Fatalf("Get(%s): %v", d, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%s): %d bytes differ from the %d put", d, len(got), len(want))
	}
}

func TestKnownDigestNeverReadsAcrossUniverses(t *testing.T) {
	ctx := context.Background()
	db, _ := connect(t)
	objects := dirObjects(t) // one bucket shared by both tenants
	a := openStore(t, db, "tenant-a", objects)
	b := openStore(t, db, "tenant-b", objects)
	small, large := []byte("tenant A's secret"), blobtest.Bytes(11, 300<<10)
	ds, dl := mustPut(t, a, small), mustPut(t, a, large)

	for _, d := range []content.Digest{ds, dl} {
		if got, err := b.Get(ctx, d); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("B.Get(%s) = %d bytes, %v; want not found", d, len(got), err)
		}
	}
	missing, err := b.Missing(ctx, []content.Digest{dl, ds})
	if err != nil {
		t.Fatal(err)
	}
	want := []content.Digest{ds, dl}
	content.SortDigests(want)
	if len(missing) != 2 || missing[0] != want[0] || missing[1] != want[1] {
		t.Fatalf("B.Missing = %v, want both %v", missing, want)
	}
	if u, err := b.Usage(ctx); err != nil || u != (blob.Usage{}) {
		t.Fatalf("B.Usage = %+v, %v; want zero", u, err)
	}

	// Naming A's digest in B's history neither reads nor roots it.
	_, err = b.Append(ctx, "s1", 0, []core.Proposal{core.NewProposal(1, nil, "test.refs", map[string]content.Digest{"a": ds, "b": dl})})
	var me *blob.MissingError
	if !errors.As(err, &me) || len(me.Digests) != 2 {
		t.Fatalf("B.Append referencing A's blobs: %v, want a MissingError listing both", err)
	}
	if _, err := b.Session(ctx, "s1"); err == nil {
		t.Fatal("rejected append created the session")
	}
	if err := b.PutEdges(ctx, ds, []content.Digest{dl}); !errors.As(err, &me) || len(me.Digests) != 2 {
		t.Fatalf("B.PutEdges over A's blobs: %v, want a MissingError listing both", err)
	}

	// B storing the same bytes gets its own row and its own object.
	mustPut(t, b, large)
	mustGet(t, b, dl, large)
	files := objectFiles(t, objects)
	if len(files) != 2 || !strings.HasPrefix(files[0], "tenant-a/") || !strings.HasPrefix(files[1], "tenant-b/") {
		t.Fatalf("objects %v, want one under tenant-a/ and one under tenant-b/", files)
	}
}

func TestOverInlineLimitWithoutObjectStorageFails(t *testing.T) {
	ctx := context.Background()
	db, url := connect(t)
	s := openStore(t, db, "default", nil)
	data := blobtest.Bytes(12, postgres.InlineMax+1)
	_, err := s.Put(ctx, data)
	if !errors.Is(err, postgres.ErrObjectStorageRequired) {
		t.Fatalf("Put(64 KiB + 1) without objects: %v, want ErrObjectStorageRequired", err)
	}
	if !strings.Contains(err.Error(), "object storage is required") {
		t.Fatalf("error %q does not say object storage is required", err)
	}
	if n := countRows(t, sql(t, url), `SELECT count(*) FROM blobs`); n != 0 {
		t.Fatalf("failed Put left %d catalog rows", n)
	}
	// Up to the limit needs no object storage.
	mustGet(t, s, mustPut(t, s, data[:postgres.InlineMax]), data[:postgres.InlineMax])
}

func TestExactly64KiBIsInlineAndLargerIsAnObject(t *testing.T) {
	db, url := connect(t)
	objects := dirObjects(t)
	s := openStore(t, db, "default", objects)
	conn := sql(t, url)

	at := mustPut(t, s, blobtest.Bytes(13, postgres.InlineMax))
	if r := readRow(t, conn, "default", at); r.objectKey != nil || r.storedSize != postgres.InlineMax || r.size != postgres.InlineMax {
		t.Fatalf("64 KiB blob: key %v, %d bytes inline; want inline only", r.objectKey, r.storedSize)
	}
	empty := mustPut(t, s, nil)
	if r := readRow(t, conn, "default", empty); r.objectKey != nil || r.storedSize != 0 {
		t.Fatalf("empty blob: key %v, inline %d; want inline", r.objectKey, r.storedSize)
	}
	if files := objectFiles(t, objects); len(files) != 0 {
		t.Fatalf("inline blobs wrote objects %v", files)
	}

	over := mustPut(t, s, blobtest.Bytes(14, postgres.InlineMax+1))
	r := readRow(t, conn, "default", over)
	if r.objectKey == nil || r.storedSize != -1 {
		t.Fatalf("64 KiB + 1 blob: key %v, inline %d; want an object only", r.objectKey, r.storedSize)
	}
	pattern := regexp.MustCompile(`^default/` + over.Hex()[:2] + `/` + over.Hex() + `/[0-9a-f]{32}$`)
	if !pattern.MatchString(*r.objectKey) {
		t.Fatalf("object key %q, want %s", *r.objectKey, pattern)
	}
	if files := objectFiles(t, objects); len(files) != 1 || files[0] != *r.objectKey {
		t.Fatalf("objects %v, want [%s]", files, *r.objectKey)
	}
}

// TestRacingWritersLeaveOneRowAndOneObject holds every writer between its
// upload and its insert until all have uploaded, so all but one must lose
// the insert and remove their own object.
func TestRacingWritersLeaveOneRowAndOneObject(t *testing.T) {
	db, url := connect(t)
	objects := dirObjects(t)
	s := openStore(t, db, "default", objects)
	const writers = 8
	var uploaded sync.WaitGroup
	uploaded.Add(writers)
	postgres.SetTestHookBeforeInsert(s, func() {
		uploaded.Done()
		uploaded.Wait()
	})
	data := blobtest.Bytes(15, 1<<20)
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() { _, errs[i] = s.Put(context.Background(), data) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	d := content.Sum(data)
	conn := sql(t, url)
	if n := countRows(t, conn, `SELECT count(*) FROM blobs WHERE digest = $1`, d[:]); n != 1 {
		t.Fatalf("%d catalog rows, want 1", n)
	}
	key := readRow(t, conn, "default", d).objectKey
	if files := objectFiles(t, objects); len(files) != 1 || key == nil || files[0] != *key {
		t.Fatalf("objects %v after %d racing writers, want only the row's %v", files, writers, key)
	}
	mustGet(t, s, d, data)
}

// TestUnorchestratedRacingWriters is the same race left to the scheduler.
func TestUnorchestratedRacingWriters(t *testing.T) {
	db, url := connect(t)
	objects := dirObjects(t)
	s := openStore(t, db, "default", objects)
	data := blobtest.Bytes(16, 1<<20)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = s.Put(context.Background(), data) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := countRows(t, sql(t, url), `SELECT count(*) FROM blobs`); n != 1 {
		t.Fatalf("%d catalog rows, want 1", n)
	}
	if files := objectFiles(t, objects); len(files) != 1 {
		t.Fatalf("objects %v, want exactly one", files)
	}
}

// TestReplacedUploadsLateDeleteCannotRemoveTheNewOne plays a collector that
// deletes a blob's row, is slow to delete its object, and meanwhile the same
// bytes are uploaded again.
func TestReplacedUploadsLateDeleteCannotRemoveTheNewOne(t *testing.T) {
	ctx := context.Background()
	db, url := connect(t)
	objects := dirObjects(t)
	s := openStore(t, db, "default", objects)
	conn := sql(t, url)
	data := blobtest.Bytes(17, 200<<10)
	d := mustPut(t, s, data)
	old := *readRow(t, conn, "default", d).objectKey

	if _, err := conn.Exec(ctx, `DELETE FROM blobs WHERE universe = 'default' AND digest = $1`, d[:]); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, data)
	fresh := *readRow(t, conn, "default", d).objectKey
	if fresh == old {
		t.Fatalf("re-upload reused object key %q", old)
	}
	if err := objects.Delete(ctx, old); err != nil { // the collector's late cleanup
		t.Fatal(err)
	}
	mustGet(t, s, d, data)
	if files := objectFiles(t, objects); len(files) != 1 || files[0] != fresh {
		t.Fatalf("objects %v, want only the new upload %s", files, fresh)
	}
}

// countingObjects counts uploads.
type countingObjects struct {
	objstore.Store
	puts atomic.Int64
}

func (c *countingObjects) Put(ctx context.Context, key string, data []byte) error {
	c.puts.Add(1)
	return c.Store.Put(ctx, key, data)
}

func TestPutAndTouchMoveTouchedForwardAndGetDoesNot(t *testing.T) {
	ctx := context.Background()
	var clock atomic.Int64
	clock.Store(1_000_000)
	db, url := connect(t, postgres.WithNow(func() time.Time { return time.UnixMilli(clock.Load()) }))
	objects := dirObjects(t)
	counting := &countingObjects{Store: objects}
	s := openStore(t, db, "default", counting)
	conn := sql(t, url)
	// Small inline, inline above touchFirstMin, and an object.
	for _, data := range [][]byte{[]byte("inline"), blobtest.Bytes(21, 32<<10), blobtest.Bytes(18, 100<<10)} {
		clock.Store(1_000_000)
		d := mustPut(t, s, data)
		first := readRow(t, conn, "default", d)

		clock.Store(2_000_000)
		mustPut(t, s, data)
		r := readRow(t, conn, "default", d)
		if r.created.UnixMilli() != 1_000_000 || r.touched.UnixMilli() != 2_000_000 {
			t.Fatalf("%d bytes after re-Put: created %d touched %d; want 1000000, 2000000",
				len(data), r.created.UnixMilli(), r.touched.UnixMilli())
		}
		if (r.objectKey == nil) != (first.objectKey == nil) || (r.objectKey != nil && *r.objectKey != *first.objectKey) {
			t.Fatalf("re-Put replaced the object: %v, was %v", r.objectKey, first.objectKey)
		}

		clock.Store(3_000_000)
		mustGet(t, s, d, data)
		if _, err := s.Missing(ctx, []content.Digest{d}); err != nil {
			t.Fatal(err)
		}
		if r := readRow(t, conn, "default", d); r.touched.UnixMilli() != 2_000_000 {
			t.Fatalf("reading moved touched_at to %d", r.touched.UnixMilli())
		}
		// A writer with a slower clock never moves it back.
		clock.Store(1_500_000)
		mustPut(t, s, data)
		if r := readRow(t, conn, "default", d); r.touched.UnixMilli() != 2_000_000 {
			t.Fatalf("an older put moved touched_at back to %d", r.touched.UnixMilli())
		}
		// An admission by ref renews it like a put, and never moves it back.
		clock.Store(4_000_000)
		if missing, err := s.Touch(ctx, []content.Digest{d}); err != nil || len(missing) != 0 {
			t.Fatalf("Touch = %v, %v", missing, err)
		}
		if r := readRow(t, conn, "default", d); r.touched.UnixMilli() != 4_000_000 {
			t.Fatalf("Touch left touched_at at %d, want 4000000", r.touched.UnixMilli())
		}
		clock.Store(3_500_000)
		if _, err := s.Touch(ctx, []content.Digest{d}); err != nil {
			t.Fatal(err)
		}
		if r := readRow(t, conn, "default", d); r.touched.UnixMilli() != 4_000_000 {
			t.Fatalf("an older Touch moved touched_at back to %d", r.touched.UnixMilli())
		}
	}
	if n := counting.puts.Load(); n != 1 {
		t.Fatalf("%d uploads for one large blob put four times, want 1", n)
	}
}

func TestGetDetectsCorruption(t *testing.T) {
	ctx := context.Background()
	db, url := connect(t)
	objects := dirObjects(t)
	s := openStore(t, db, "default", objects)
	conn := sql(t, url)

	small := mustPut(t, s, []byte("small and inline"))
	if _, err := conn.Exec(ctx, `UPDATE blobs SET inline = 'SMALL and inline' WHERE digest = $1`, small[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, small); !errors.Is(err, blob.ErrCorrupt) {
		t.Fatalf("Get of altered inline bytes: %v, want ErrCorrupt", err)
	}

	data := blobtest.Bytes(19, 70<<10)
	large := mustPut(t, s, data)
	path := filepath.Join(objects.Root(), filepath.FromSlash(*readRow(t, conn, "default", large).objectKey))
	flipped := bytes.Clone(data)
	flipped[1000] ^= 1
	for name, body := range map[string][]byte{"altered": flipped, "truncated": data[:10]} {
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, large); !errors.Is(err, blob.ErrCorrupt) {
			t.Fatalf("Get of %s object: %v, want ErrCorrupt", name, err)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, large); !errors.Is(err, blob.ErrCorrupt) {
		t.Fatalf("Get of vanished object: %v, want ErrCorrupt", err)
	}
}

func TestObjectBlobWithoutObjectStorageCannotBeRead(t *testing.T) {
	db, _ := connect(t)
	data := blobtest.Bytes(20, 100<<10)
	d := mustPut(t, openStore(t, db, "default", dirObjects(t)), data)
	bare := openStore(t, db, "default", nil)
	if _, err := bare.Get(context.Background(), d); !errors.Is(err, postgres.ErrObjectStorageRequired) {
		t.Fatalf("Get without objects: %v, want ErrObjectStorageRequired", err)
	}
	// Its catalog row is still there for everything else.
	if missing, err := bare.Missing(context.Background(), []content.Digest{d}); err != nil || len(missing) != 0 {
		t.Fatalf("Missing = %v, %v", missing, err)
	}
}
