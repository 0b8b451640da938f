// Package objstoretest is the conformance suite for objstore.Store backends.
// The directory and S3 backends both run it, so the blob catalog above them
// can rely on one behaviour whichever is configured.
package objstoretest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/objstore"
)

// Sizes the round trip covers: empty, one byte, a typical large blob, past
// the 5 MiB S3 minimum part size, and past minio-go's 16 MiB single-PUT
// limit so an S3 backend exercises its multipart path too.
var roundTripSizes = []int{0, 1, 1 << 20, 5<<20 + 1, 16<<20 + 1}

// Run checks the Store contract. newStore must return an empty store that
// no other subtest uses (a fresh directory, or a fresh S3 key prefix).
func Run(t *testing.T, newStore func(t *testing.T) objstore.Store) {
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, newStore(t)) })
	t.Run("UnusualKeys", func(t *testing.T) { testUnusualKeys(t, newStore(t)) })
	t.Run("Overwrite", func(t *testing.T) { testOverwrite(t, newStore(t)) })
	t.Run("ConcurrentOverwrite", func(t *testing.T) { testConcurrentOverwrite(t, newStore(t)) })
	t.Run("GetAbsent", func(t *testing.T) { testGetAbsent(t, newStore(t)) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, newStore(t)) })
	t.Run("InvalidKeys", func(t *testing.T) { testInvalidKeys(t, newStore(t)) })
	t.Run("ConcurrentKeys", func(t *testing.T) { testConcurrentKeys(t, newStore(t)) })
	t.Run("CancelledContext", func(t *testing.T) { testCancelledContext(t, newStore(t)) })
}

func testRoundTrip(t *testing.T, s objstore.Store) {
	ctx := context.Background()
	for _, n := range roundTripSizes {
		key := fmt.Sprintf("roundtrip/%d", n)
		body := randomBytes(key, n)
		want := bytes.Clone(body)
		mustPut(t, s, key, body)
		// The store must have copied the body: the caller may reuse it.
		if n > 0 {
			body[0] ^= 0xff
		}
		got := mustGet(t, s, key)
		sameBytes(t, "Get("+key+")", got, want)
		// Nor may it hand out a buffer it keeps.
		if len(got) > 0 {
			got[0] ^= 0xff
			sameBytes(t, "second Get("+key+")", mustGet(t, s, key), want)
		}
	}
	if _, err := s.Get(ctx, "roundtrip/absent"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Get of a key never put: %v, want ErrNotFound", err)
	}
}

// Keys needing URL escaping must reach the backend unchanged: "+" is not a
// space, an encoded slash is not a slash, "?" and "#" are not URL syntax.
func testUnusualKeys(t *testing.T, s objstore.Store) {
	keys := []string{
		"with space/x", "with+space/x", "pct%2Fslash", "pct/slash", "pct%20",
		"query?a=1&b=2", "hash#frag", "ünïcødé/✓", "tilde~star*", "colon:semi;comma,",
		"mixed/Case", "mixed/case-2",
	}
	for _, key := range keys {
		mustPut(t, s, key, []byte("body of "+key))
	}
	for _, key := range keys {
		sameBytes(t, "Get("+key+")", mustGet(t, s, key), []byte("body of "+key))
	}
}

func testOverwrite(t *testing.T, s objstore.Store) {
	long := randomBytes("overwrite-long", 1<<20)
	mustPut(t, s, "ow/key", long)
	// A shorter body must not leave the old tail behind.
	mustPut(t, s, "ow/key", []byte("short"))
	sameBytes(t, "after shorter overwrite", mustGet(t, s, "ow/key"), []byte("short"))
	mustPut(t, s, "ow/key", nil)
	sameBytes(t, "after empty overwrite", mustGet(t, s, "ow/key"), nil)
	mustPut(t, s, "ow/key", long)
	sameBytes(t, "after overwriting empty", mustGet(t, s, "ow/key"), long)
}

// Racing writers of one key leave exactly one writer's complete body, and
// readers meanwhile see whole bodies only.
func testConcurrentOverwrite(t *testing.T, s objstore.Store) {
	ctx := context.Background()
	const writers = 6
	bodies := make([][]byte, writers)
	for i := range bodies {
		bodies[i] = randomBytes(fmt.Sprintf("racer-%d", i), 256<<10)
	}
	isWhole := func(got []byte) bool {
		for _, b := range bodies {
			if bytes.Equal(got, b) {
				return true
			}
		}
		return false
	}
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() { errs[i] = s.Put(ctx, "race/key", bodies[i]) })
	}
	for range 10 {
		got, err := s.Get(ctx, "race/key")
		if errors.Is(err, objstore.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Errorf("Get during the race: %v", err)
			break
		}
		if !isWhole(got) {
			t.Errorf("Get during the race returned %d bytes matching no writer", len(got))
			break
		}
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Put %d: %v", i, err)
		}
	}
	if got := mustGet(t, s, "race/key"); !isWhole(got) {
		t.Fatalf("final body (%d bytes) matches no writer", len(got))
	}
}

func testGetAbsent(t *testing.T, s objstore.Store) {
	ctx := context.Background()
	mustPut(t, s, "parent/child", []byte("v"))
	// "parent" is only the leading path of a key, not an object.
	for _, key := range []string{"never/put", "parent", "parent/chil", "parent/child/grandchild"} {
		_, err := s.Get(ctx, key)
		if !errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", key, err)
		}
		if err := s.Delete(ctx, key); err != nil {
			t.Errorf("Delete(%q) of a non-object: %v, want nil", key, err)
		}
	}
	sameBytes(t, "Get(parent/child) after deleting non-objects", mustGet(t, s, "parent/child"), []byte("v"))
}

func testDelete(t *testing.T, s objstore.Store) {
	ctx := context.Background()
	if err := s.Delete(ctx, "del/never-put"); err != nil {
		t.Errorf("Delete of an absent key: %v, want nil", err)
	}
	for _, key := range []string{"del/a", "del/ab", "del/a-b", "other/a"} {
		mustPut(t, s, key, []byte(key))
	}
	for i := range 2 {
		if err := s.Delete(ctx, "del/a"); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if _, err := s.Get(ctx, "del/a"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	// Only that key went: no prefix matching.
	for _, key := range []string{"del/ab", "del/a-b", "other/a"} {
		sameBytes(t, "Get("+key+") after deleting del/a", mustGet(t, s, key), []byte(key))
	}
	// Deleting the leading path of keys deletes nothing.
	if err := s.Delete(ctx, "del"); err != nil {
		t.Errorf("Delete(%q) of a non-object: %v, want nil", "del", err)
	}
	sameBytes(t, "Get(del/ab) after Delete(del)", mustGet(t, s, "del/ab"), []byte("del/ab"))
	// A deleted key can be written again.
	mustPut(t, s, "del/a", []byte("again"))
	sameBytes(t, "Get after re-Put", mustGet(t, s, "del/a"), []byte("again"))
}

// invalidKeys maps each key ValidateKey rejects to the key a backend that
// normalised instead of rejecting would have written.
var invalidKeys = map[string]string{
	"":                                      "",
	"/abs":                                  "abs",
	"../escape":                             "escape",
	"a/../../escape":                        "escape",
	"a/../b":                                "b",
	"a/./b":                                 "a/b",
	"a//b":                                  "a/b",
	"a/":                                    "a",
	".hidden":                               "hidden",
	"a/.tmp-123":                            "a/tmp-123",
	`a\b`:                                   "a/b",
	"a\x00b":                                "ab",
	string(bytes.Repeat([]byte("k"), 1025)): "",
}

func testInvalidKeys(t *testing.T, s objstore.Store) {
	ctx := context.Background()
	for key := range invalidKeys {
		if err := s.Put(ctx, key, []byte("v")); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Put(%.40q): %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Get(ctx, key); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Get(%.40q): %v, want ErrInvalidKey", key, err)
		}
		if err := s.Delete(ctx, key); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Delete(%.40q): %v, want ErrInvalidKey", key, err)
		}
	}
	for key, normalised := range invalidKeys {
		if normalised == "" {
			continue
		}
		if _, err := s.Get(ctx, normalised); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("after Put(%q) was rejected, Get(%q) = %v, want ErrNotFound", key, normalised, err)
		}
	}
}

func testConcurrentKeys(t *testing.T, s objstore.Store) {
	ctx := context.Background()
	const n = 16
	key := func(i int) string { return fmt.Sprintf("conc/%02d", i) }
	body := func(i int) []byte { return randomBytes(key(i), 64<<10+i) }
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = s.Put(ctx, key(i), body(i)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Put(%s): %v", key(i), err)
		}
	}
	got := make([][]byte, n)
	for i := range n {
		wg.Go(func() { got[i], errs[i] = s.Get(ctx, key(i)) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Get(%s): %v", key(i), errs[i])
			continue
		}
		sameBytes(t, "Get("+key(i)+")", got[i], body(i))
	}
}

func testCancelledContext(t *testing.T, s objstore.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Put(ctx, "cancelled/key", []byte("v")); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := s.Get(context.Background(), "cancelled/key"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("a cancelled Put wrote the object: Get = %v", err)
	}
	mustPut(t, s, "cancelled/present", []byte("v"))
	if _, err := s.Get(ctx, "cancelled/present"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context: %v, want context.Canceled", err)
	}
	if err := s.Delete(ctx, "cancelled/present"); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete with a cancelled context: %v, want context.Canceled", err)
	}
	sameBytes(t, "after a cancelled Delete", mustGet(t, s, "cancelled/present"), []byte("v"))
}

func mustPut(t *testing.T, s objstore.Store, key string, data []byte) {
	t.Helper()
	if err := s.Put(context.Background(), key, data); err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(data), err)
	}
}

func mustGet(t *testing.T, s objstore.Store, key string) []byte {
	t.Helper()
	data, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return data
}

// sameBytes reports where got differs from want without printing megabytes.
func sameBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d bytes, want %d", what, len(got), len(want))
		return
	}
	i := 0
	for got[i] == want[i] {
		i++
	}
	t.Errorf("%s: %d bytes differ from what was put, first at offset %d", what, len(got), i)
}

// randomBytes is deterministic per name, so a failure reproduces, and
// incompressible, so no layer can shortcut it.
func randomBytes(name string, n int) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(sha256.Sum256([]byte(name))).Read(b)
	return b
}
