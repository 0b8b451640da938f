package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/blob/blobtest"
	"github.com/cairn-agents/cairn/content"
)

func openTest(t *testing.T, dir string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), dir, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type blobRow struct {
	inline    []byte
	isInline  bool
	key       sql.NullString
	createdMs int64
	touchedMs int64
}

func readRow(t *testing.T, s *Store, d content.Digest) blobRow {
	t.Helper()
	var r blobRow
	err := s.reader.QueryRowContext(context.Background(),
		`SELECT inline, inline IS NOT NULL, object_key, created_at_ms, touched_at_ms FROM blobs WHERE universe = ? AND digest = ?`,
		s.universe, d.String()).Scan(&r.inline, &r.isInline, &r.key, &r.createdMs, &r.touchedMs)
	if err != nil {
		t.Fatalf("read blobs row %s: %v", d, err)
	}
	return r
}

// objectFiles lists every file under objects/, as keys.
func objectFiles(t *testing.T, s *Store) []string {
	t.Helper()
	root := s.objects.(interface{ Root() string }).Root()
	var keys []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		keys = append(keys, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func mustPut(t *testing.T, s *Store, data []byte) content.Digest {
	t.Helper()
	d, err := s.Put(context.Background(), data)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	return d
}

func TestInlineUpTo64KiBObjectsAbove(t *testing.T) {
	s := openTest(t, t.TempDir())
	small := mustPut(t, s, blobtest.Bytes(1, InlineMax))
	if r := readRow(t, s, small); !r.isInline || r.key.Valid || len(r.inline) != InlineMax {
		t.Fatalf("64 KiB blob: inline=%v (%d bytes) key=%v; want inline only", r.isInline, len(r.inline), r.key)
	}
	if files := objectFiles(t, s); len(files) != 0 {
		t.Fatalf("64 KiB blob wrote objects %v", files)
	}
	empty := mustPut(t, s, nil)
	if r := readRow(t, s, empty); !r.isInline || r.key.Valid {
		t.Fatalf("empty blob: inline=%v key=%v; want inline", r.isInline, r.key)
	}

	large := mustPut(t, s, blobtest.Bytes(2, InlineMax+1))
	r := readRow(t, s, large)
	if r.isInline || !r.key.Valid {
		t.Fatalf("64 KiB + 1 blob: inline=%v key=%v; want an object", r.isInline, r.key)
	}
	prefix := "default/" + large.Hex()[:2] + "/" + large.Hex() + "-"
	if !strings.HasPrefix(r.key.String, prefix) || len(r.key.String) <= len(prefix) {
		t.Fatalf("object key %q, want %q + upload id", r.key.String, prefix)
	}
	if files := objectFiles(t, s); len(files) != 1 || files[0] != r.key.String {
		t.Fatalf("objects/ holds %v, want [%s]", files, r.key.String)
	}
}

func TestReuploadAfterRowDeletedUsesFreshKey(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	data := blobtest.Bytes(3, 100<<10)
	d := mustPut(t, s, data)
	first := readRow(t, s, d).key.String
	// What retention does to the row (it would also delete the object later).
	if _, err := s.writes.ExecContext(ctx, `DELETE FROM blobs WHERE universe = ? AND digest = ?`, s.universe, d.String()); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, data)
	second := readRow(t, s, d).key.String
	if first == second {
		t.Fatalf("re-upload reused object key %q", first)
	}
	if files := objectFiles(t, s); len(files) != 2 {
		t.Fatalf("objects/ holds %v, want the old and the new object", files)
	}
	got, err := s.Get(ctx, d)
	if err != nil || string(got) != string(data) {
		t.Fatalf("Get after re-upload: %d bytes, %v", len(got), err)
	}
}

func TestLosingInsertRaceDeletesOwnObject(t *testing.T) {
	s := openTest(t, t.TempDir())
	data := blobtest.Bytes(4, 80<<10)
	// Another writer stores the same bytes after our object is written but
	// before our row goes in.
	s.testHookBeforeInsert = func() {
		s.testHookBeforeInsert = nil
		mustPut(t, s, data)
	}
	d := mustPut(t, s, data)
	winner := readRow(t, s, d).key.String
	if files := objectFiles(t, s); len(files) != 1 || files[0] != winner {
		t.Fatalf("objects/ holds %v, want only the winner's %s", files, winner)
	}
	if got, err := s.Get(context.Background(), d); err != nil || string(got) != string(data) {
		t.Fatalf("Get: %d bytes, %v", len(got), err)
	}
}

func TestConcurrentLargePutsLeaveOneObject(t *testing.T) {
	s := openTest(t, t.TempDir())
	data := blobtest.Bytes(5, 300<<10)
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Go(func() { _, errs[i] = s.Put(context.Background(), data) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if files := objectFiles(t, s); len(files) != 1 {
		t.Fatalf("objects/ holds %d files after concurrent puts of one blob: %v", len(files), files)
	}
}

func TestGetDetectsCorruption(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	small := mustPut(t, s, []byte("small and inline"))
	if _, err := s.writes.ExecContext(ctx, `UPDATE blobs SET inline = ? WHERE digest = ?`, []byte("SMALL and inline"), small.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, small); !errors.Is(err, blob.ErrCorrupt) {
		t.Fatalf("Get of altered inline bytes: %v, want ErrCorrupt", err)
	}

	large := mustPut(t, s, blobtest.Bytes(6, 70<<10))
	path := filepath.Join(s.objects.(interface{ Root() string }).Root(), filepath.FromSlash(readRow(t, s, large).key.String))
	flipped := blobtest.Bytes(6, 70<<10)
	flipped[1000] ^= 1
	if err := os.WriteFile(path, flipped, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, large); !errors.Is(err, blob.ErrCorrupt) {
		t.Fatalf("Get of altered object: %v, want ErrCorrupt", err)
	}
	if err := os.WriteFile(path, flipped[:10], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, large); !errors.Is(err, blob.ErrCorrupt) {
		t.Fatalf("Get of truncated object: %v, want ErrCorrupt", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, large); !errors.Is(err, blob.ErrCorrupt) {
		t.Fatalf("Get of vanished object: %v, want ErrCorrupt", err)
	}
}

func TestPutAndTouchRenewTouchedTimeAndGetDoesNot(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_000_000)
	s := openTest(t, t.TempDir(), WithNow(func() time.Time { return now }))
	for _, data := range [][]byte{[]byte("inline"), blobtest.Bytes(7, 70<<10)} {
		now = time.UnixMilli(1_000_000)
		d := mustPut(t, s, data)
		key := readRow(t, s, d).key
		now = time.UnixMilli(2_000_000)
		mustPut(t, s, data)
		r := readRow(t, s, d)
		if r.createdMs != 1_000_000 || r.touchedMs != 2_000_000 {
			t.Fatalf("after re-Put: created %d touched %d; want 1000000, 2000000", r.createdMs, r.touchedMs)
		}
		if r.key != key {
			t.Fatalf("re-Put rewrote the object: key %v, was %v", r.key, key)
		}
		now = time.UnixMilli(3_000_000)
		if _, err := s.Get(ctx, d); err != nil {
			t.Fatal(err)
		}
		if r := readRow(t, s, d); r.touchedMs != 2_000_000 {
			t.Fatalf("Get renewed touched time to %d", r.touchedMs)
		}
		// An admission by ref renews it like a put; an older clock never
		// moves it back.
		now = time.UnixMilli(4_000_000)
		if missing, err := s.Touch(ctx, []content.Digest{d}); err != nil || len(missing) != 0 {
			t.Fatalf("Touch = %v, %v", missing, err)
		}
		if r := readRow(t, s, d); r.touchedMs != 4_000_000 || r.createdMs != 1_000_000 {
			t.Fatalf("after Touch: created %d touched %d; want 1000000, 4000000", r.createdMs, r.touchedMs)
		}
		now = time.UnixMilli(3_500_000)
		if _, err := s.Touch(ctx, []content.Digest{d}); err != nil {
			t.Fatal(err)
		}
		if r := readRow(t, s, d); r.touchedMs != 4_000_000 {
			t.Fatalf("an older Touch moved touched time back to %d", r.touchedMs)
		}
	}
}
