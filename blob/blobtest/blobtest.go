// Package blobtest is the conformance suite every blob.Store backend runs.
package blobtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
)

// Run exercises the blob.Store contract. newStore must return an empty store
// that the test owns (register any cleanup with t.Cleanup).
func Run(t *testing.T, newStore func(t *testing.T) blob.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s blob.Store)
	}{
		{"PutGetRoundTrip", testRoundTrip},
		{"PutIsIdempotent", testPutIdempotent},
		{"GetAbsentIsNotFound", testGetAbsent},
		{"MissingListsExactlyTheAbsentSorted", testMissing},
		{"TouchListsTheAbsentAndCreatesNothing", testTouch},
		{"EmptyBlob", testEmpty},
		{"SizesAroundInlineLimit", testInlineBoundary},
		{"LargeBlobRoundTrip", testLarge},
		{"ConcurrentPutsOfSameBytes", testConcurrentSame},
		{"ConcurrentPutsOfDifferentBytes", testConcurrentDifferent},
		{"UsageCountsBlobsAndBytes", testUsage},
		{"CallerSlicesDoNotAliasStoredBytes", testNoAliasing},
		{"GetManyReadsWhatItHolds", testGetMany},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

// Bytes returns n deterministic pseudo-random bytes; the seed picks the stream.
func Bytes(seed uint64, n int) []byte {
	var key [32]byte
	key[0] = byte(seed)
	key[1] = byte(seed >> 8)
	key[2] = byte(seed >> 16)
	key[3] = byte(seed >> 24)
	r := rand.NewChaCha8(key)
	out := make([]byte, n)
	_, _ = r.Read(out)
	return out
}

func mustPut(t *testing.T, s blob.Store, data []byte) content.Digest {
	t.Helper()
	d, err := s.Put(context.Background(), data)
	if err != nil {
		t.Fatalf("Put(%d bytes): %v", len(data), err)
	}
	if want := content.Sum(data); d != want {
		t.Fatalf("Put returned digest %s, want %s", d, want)
	}
	return d
}

func mustGet(t *testing.T, s blob.Store, d content.Digest, want []byte) {
	t.Helper()
	got, err := s.Get(context.Background(), d)
	if err != nil {
		t.Fatalf("Get(%s): %v", d, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%s) returned %d bytes that differ from the %d put", d, len(got), len(want))
	}
}

func mustUsage(t *testing.T, s blob.Store, want blob.Usage) {
	t.Helper()
	got, err := s.Usage(context.Background())
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	if got != want {
		t.Fatalf("Usage = %+v, want %+v", got, want)
	}
}

func testRoundTrip(t *testing.T, s blob.Store) {
	data := []byte(`{"hello":"world"}`)
	d := mustPut(t, s, data)
	mustGet(t, s, d, data)
}

func testPutIdempotent(t *testing.T, s blob.Store) {
	data := []byte("same bytes twice")
	d1 := mustPut(t, s, data)
	d2 := mustPut(t, s, append([]byte(nil), data...))
	if d1 != d2 {
		t.Fatalf("digests differ: %s vs %s", d1, d2)
	}
	mustGet(t, s, d1, data)
	mustUsage(t, s, blob.Usage{Blobs: 1, Bytes: int64(len(data))})
}

func testGetAbsent(t *testing.T, s blob.Store) {
	mustPut(t, s, []byte("present"))
	absent := content.Sum([]byte("absent"))
	got, err := s.Get(context.Background(), absent)
	if err == nil {
		t.Fatalf("Get of absent digest returned %d bytes and no error", len(got))
	}
	if !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("error %v does not match blob.ErrNotFound", err)
	}
	var nf *blob.NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("error %T is not a *blob.NotFoundError", err)
	}
	if nf.Digest != absent {
		t.Fatalf("NotFoundError names %s, want %s", nf.Digest, absent)
	}
}

func testMissing(t *testing.T, s blob.Store) {
	ctx := context.Background()
	a := mustPut(t, s, []byte("a"))
	b := mustPut(t, s, []byte("b"))
	var absent []content.Digest
	for i := range 5 {
		absent = append(absent, content.Sum(fmt.Appendf(nil, "absent %d", i)))
	}
	// Ask in scrambled order with a repeat; the answer is sorted and unique.
	query := []content.Digest{absent[3], a, absent[0], absent[4], b, absent[1], absent[3], absent[2]}
	got, err := s.Missing(ctx, query)
	if err != nil {
		t.Fatalf("Missing: %v", err)
	}
	want := slices.Clone(absent)
	content.SortDigests(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Missing = %v, want %v", got, want)
	}

	got, err = s.Missing(ctx, []content.Digest{a, b})
	if err != nil {
		t.Fatalf("Missing(present): %v", err)
	}
	if len(got) != 0 {
		t.Fatalf("Missing(present) = %v, want none", got)
	}
	got, err = s.Missing(ctx, nil)
	if err != nil {
		t.Fatalf("Missing(nil): %v", err)
	}
	if len(got) != 0 {
		t.Fatalf("Missing(nil) = %v, want none", got)
	}
}

func testTouch(t *testing.T, s blob.Store) {
	ctx := context.Background()
	a := mustPut(t, s, []byte("touched a"))
	x := content.Sum([]byte("never put x"))
	y := content.Sum([]byte("never put y"))
	got, err := s.Touch(ctx, []content.Digest{y, a, x, y})
	if err != nil {
		t.Fatalf("Touch: %v", err)
	}
	want := []content.Digest{x, y}
	content.SortDigests(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Touch = %v, want the absent %v", got, want)
	}
	// A touch admits existing bytes only; it never makes a digest exist.
	if got, err := s.Missing(ctx, []content.Digest{a, x, y}); err != nil || !slices.Equal(got, want) {
		t.Fatalf("Missing after Touch = %v, %v; want %v", got, err, want)
	}
	mustGet(t, s, a, []byte("touched a"))
	if got, err := s.Touch(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("Touch(nil) = %v, %v; want none", got, err)
	}
}

func testEmpty(t *testing.T, s blob.Store) {
	d := mustPut(t, s, []byte{})
	if d != content.Sum(nil) {
		t.Fatalf("empty blob digest %s, want %s", d, content.Sum(nil))
	}
	mustGet(t, s, d, nil)
	missing, err := s.Missing(context.Background(), []content.Digest{d})
	if err != nil {
		t.Fatalf("Missing: %v", err)
	}
	if len(missing) != 0 {
		t.Fatalf("empty blob reported missing")
	}
	mustUsage(t, s, blob.Usage{Blobs: 1, Bytes: 0})
}

// testInlineBoundary covers the sizes where stores switch representation
// (≤ 64 KiB inline, larger elsewhere in the database-backed stores).
func testInlineBoundary(t *testing.T, s blob.Store) {
	var total int64
	for i, n := range []int{64<<10 - 1, 64 << 10, 64<<10 + 1} {
		data := Bytes(uint64(100+i), n)
		d := mustPut(t, s, data)
		mustGet(t, s, d, data)
		total += int64(n)
	}
	mustUsage(t, s, blob.Usage{Blobs: 3, Bytes: total})
}

func testLarge(t *testing.T, s blob.Store) {
	data := Bytes(7, 1<<20)
	d := mustPut(t, s, data)
	mustGet(t, s, d, data)
	// A second put of large bytes stays a single blob.
	mustPut(t, s, data)
	mustUsage(t, s, blob.Usage{Blobs: 1, Bytes: 1 << 20})
}

func testConcurrentSame(t *testing.T, s blob.Store) {
	for _, n := range []int{100, 200 << 10} { // one inline-sized, one large
		data := Bytes(uint64(n), n)
		want := content.Sum(data)
		const workers = 12
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for range workers {
			wg.Go(func() {
				d, err := s.Put(context.Background(), data)
				if err == nil && d != want {
					err = fmt.Errorf("digest %s, want %s", d, want)
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent Put of %d bytes: %v", n, err)
			}
		}
		mustGet(t, s, want, data)
	}
	mustUsage(t, s, blob.Usage{Blobs: 2, Bytes: 100 + 200<<10})
}

func testConcurrentDifferent(t *testing.T, s blob.Store) {
	const workers = 16
	var wg sync.WaitGroup
	datas := make([][]byte, workers)
	errs := make([]error, workers)
	var total int64
	for i := range workers {
		datas[i] = Bytes(uint64(1000+i), 1000+i*5000) // mixes inline and large sizes
		total += int64(len(datas[i]))
	}
	for i := range workers {
		wg.Go(func() { _, errs[i] = s.Put(context.Background(), datas[i]) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Put %d: %v", i, err)
		}
	}
	for _, data := range datas {
		mustGet(t, s, content.Sum(data), data)
	}
	mustUsage(t, s, blob.Usage{Blobs: workers, Bytes: total})
}

func testUsage(t *testing.T, s blob.Store) {
	mustUsage(t, s, blob.Usage{})
	mustPut(t, s, []byte("12345"))
	mustUsage(t, s, blob.Usage{Blobs: 1, Bytes: 5})
	mustPut(t, s, []byte("1234567890"))
	mustUsage(t, s, blob.Usage{Blobs: 2, Bytes: 15})
	mustPut(t, s, []byte("12345"))
	mustUsage(t, s, blob.Usage{Blobs: 2, Bytes: 15})
}

func testNoAliasing(t *testing.T, s blob.Store) {
	data := []byte("original bytes")
	want := slices.Clone(data)
	d := mustPut(t, s, data)
	data[0] = 'X' // the caller reuses its buffer after Put
	mustGet(t, s, d, want)

	got, err := s.Get(context.Background(), d)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	got[0] = 'Y' // the caller scribbles on what Get returned
	mustGet(t, s, d, want)
}

// testGetMany: every backend reads many blobs at once (blob.ManyGetter),
// whatever form each is stored in, leaves out the ones it does not hold,
// and hands out bytes a caller may change.
func testGetMany(t *testing.T, s blob.Store) {
	ctx := context.Background()
	if _, ok := s.(blob.ManyGetter); !ok {
		t.Fatalf("%T does not read many blobs at once (blob.ManyGetter)", s)
	}
	small := []byte("a short message")
	compressible := bytes.Repeat([]byte("the same words again "), 500)
	large := Bytes(11, 64<<10+1)
	var ds []content.Digest
	for _, data := range [][]byte{small, compressible, {}, large} {
		ds = append(ds, mustPut(t, s, data))
	}
	absent := content.Sum([]byte("never stored"))
	got, err := blob.GetMany(ctx, s, append([]content.Digest{absent, ds[0]}, ds...))
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	if _, ok := got[absent]; ok {
		t.Fatalf("GetMany returned bytes for %s, which was never stored", absent)
	}
	for d, data := range got {
		if content.Sum(data) != d {
			t.Fatalf("GetMany returned %d bytes under %s that do not hash to it", len(data), d)
		}
	}
	// The large blob may be left for Get; what fits inline may not.
	for i, data := range [][]byte{small, compressible, {}} {
		if _, ok := got[ds[i]]; !ok {
			t.Fatalf("GetMany left out a stored blob of %d bytes", len(data))
		}
	}
	got[ds[0]][0] = 'X' // the caller scribbles on what it was given
	mustGet(t, s, ds[0], small)
	if again, err := blob.GetMany(ctx, s, ds[:1]); err != nil || !bytes.Equal(again[ds[0]], small) {
		t.Fatalf("GetMany after a caller changed its bytes: %q, %v", again[ds[0]], err)
	}
}
