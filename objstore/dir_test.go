package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/objstore"
	"github.com/cairn-agents/cairn/objstore/objstoretest"
)

func newDir(t *testing.T) *objstore.Dir {
	t.Helper()
	d, err := objstore.NewDir(filepath.Join(t.TempDir(), "objects"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDirConformance(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Store { return newDir(t) })
}

func TestDirRoundTripAndOverwrite(t *testing.T) {
	ctx := context.Background()
	d := newDir(t)
	key := "default/ab/abcdef-01"
	if err := d.Put(ctx, key, []byte("first")); err != nil {
		t.Fatal(err)
	}
	got, err := d.Get(ctx, key)
	if err != nil || string(got) != "first" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	// The key is a real relative path under the root.
	onDisk, err := os.ReadFile(filepath.Join(d.Root(), "default", "ab", "abcdef-01"))
	if err != nil || string(onDisk) != "first" {
		t.Fatalf("file on disk = %q, %v", onDisk, err)
	}
	if err := d.Put(ctx, key, []byte("second")); err != nil {
		t.Fatal(err)
	}
	got, err = d.Get(ctx, key)
	if err != nil || string(got) != "second" {
		t.Fatalf("Get after overwrite = %q, %v", got, err)
	}
	if err := d.Put(ctx, "empty", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Get(ctx, "empty"); err != nil || len(got) != 0 {
		t.Fatalf("Get(empty) = %q, %v", got, err)
	}
}

func TestDirGetAbsentIsNotFound(t *testing.T) {
	d := newDir(t)
	_, err := d.Get(context.Background(), "no/such/key")
	if !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Get absent: %v, want ErrNotFound", err)
	}
}

func TestDirDeleteIsIdempotent(t *testing.T) {
	ctx := context.Background()
	d := newDir(t)
	if err := d.Put(ctx, "x/y", []byte("v")); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := d.Delete(ctx, "x/y"); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if _, err := d.Get(ctx, "x/y"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
}

func TestDirRejectsInvalidKeys(t *testing.T) {
	ctx := context.Background()
	d := newDir(t)
	for _, key := range []string{
		"", "/abs", "../escape", "a/../../escape", "a/./b", "a//b", "a/", ".hidden",
		"a/.tmp-123", `a\b`, "a\x00b", strings.Repeat("k", 1025),
	} {
		if err := d.Put(ctx, key, []byte("v")); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Put(%q): %v, want ErrInvalidKey", key, err)
		}
		if _, err := d.Get(ctx, key); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Get(%q): %v, want ErrInvalidKey", key, err)
		}
		if err := d.Delete(ctx, key); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Delete(%q): %v, want ErrInvalidKey", key, err)
		}
	}
	// Nothing escaped the root.
	if _, err := os.Stat(filepath.Join(filepath.Dir(d.Root()), "escape")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file was written outside the root: %v", err)
	}
	for _, key := range []string{"a", "a/b.c", "universe-1/ff/" + strings.Repeat("f", 64) + "-0123"} {
		if err := objstore.ValidateKey(key); err != nil {
			t.Errorf("ValidateKey(%q) = %v, want nil", key, err)
		}
	}
}

// Concurrent writers of one key leave one complete body and no temp files.
func TestDirConcurrentPutsAreAtomic(t *testing.T) {
	ctx := context.Background()
	d := newDir(t)
	const writers = 8
	bodies := make([][]byte, writers)
	for i := range bodies {
		bodies[i] = bytes.Repeat([]byte{byte('a' + i)}, 256<<10)
	}
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() { errs[i] = d.Put(ctx, "shared/key", bodies[i]) })
	}
	// Readers never observe a partial body.
	for range 20 {
		got, err := d.Get(ctx, "shared/key")
		if errors.Is(err, objstore.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 256<<10 || !bytes.Equal(got, bytes.Repeat(got[:1], len(got))) {
			t.Fatalf("read a torn body of %d bytes", len(got))
		}
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Put %d: %v", i, err)
		}
	}
	got, err := d.Get(ctx, "shared/key")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, b := range bodies {
		found = found || bytes.Equal(got, b)
	}
	if !found {
		t.Fatalf("final body matches no writer")
	}
	entries, err := os.ReadDir(filepath.Join(d.Root(), "shared"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != "[key]" {
		t.Fatalf("directory holds %v, want only [key]", names)
	}
}

func TestDirHonoursCancelledContext(t *testing.T) {
	d := newDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Put(ctx, "k", []byte("v")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put: %v, want context.Canceled", err)
	}
	if _, err := d.Get(context.Background(), "k"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("cancelled Put wrote the object: %v", err)
	}
}
