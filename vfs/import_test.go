package vfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/store"
)

func writeTree(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestImportDir(t *testing.T) {
	ctx := context.Background()
	files := sampleFiles()
	dir := writeTree(t, files)
	if err := os.MkdirAll(filepath.Join(dir, "empty", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	blobs := blob.NewMemory()
	edges := store.NewMemory(blobs)
	m, ref, err := ImportDir(ctx, blobs, edges, dir, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// Same manifest as building from the same bytes in memory.
	if want := mustBuild(t, blob.NewMemory(), files); !reflect.DeepEqual(m, want) {
		t.Fatalf("imported %+v\nwant     %+v", m, want)
	}
	back, err := ReadManifest(ctx, blobs, ref.Digest)
	if err != nil || !reflect.DeepEqual(back, m) {
		t.Fatalf("read back: %v", err)
	}
	for _, e := range m.Files {
		data, err := blobs.Get(ctx, e.Ref.Digest)
		if err != nil || string(data) != string(files[e.Path]) {
			t.Fatalf("%s: bytes differ (%v)", e.Path, err)
		}
	}
	if kids, _ := edges.Children(ctx, ref.Digest); len(kids) != len(FileDigests(m)) {
		t.Fatalf("%d edges", len(kids))
	}

	// Limits apply to imports.
	var le *LimitError
	if _, _, err := ImportDir(ctx, blobs, edges, dir, Limits{MaxFiles: 3}); !errors.As(err, &le) || le.Limit != "files" {
		t.Fatalf("file limit: %v", err)
	}
	if _, _, err := ImportDir(ctx, blobs, edges, dir, Limits{MaxFileBytes: 9}); !errors.As(err, &le) || le.Limit != "file bytes" || le.Path != ".cairn/prompts/inst.md" {
		t.Fatalf("file size limit: %v", err)
	}
}

func TestImportDirRefusesSymlinks(t *testing.T) {
	dir := writeTree(t, map[string][]byte{"a.txt": []byte("a")})
	if err := os.Symlink("a.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatalf("creating a symlink: %v", err) // Linux, the only platform tested, has them
	}
	blobs := blob.NewMemory()
	var ue *UnsupportedFileError
	_, _, err := ImportDir(context.Background(), blobs, store.NewMemory(blobs), dir, Limits{})
	if !errors.As(err, &ue) || ue.Path != "link.txt" || ue.Kind != "symlink" {
		t.Fatalf("got %v, want UnsupportedFileError for link.txt", err)
	}
	// The root itself may be a symlink.
	link := filepath.Join(t.TempDir(), "root")
	if err := os.Symlink(writeTree(t, map[string][]byte{"x/y.md": []byte("y")}), link); err != nil {
		t.Fatal(err)
	}
	m, _, err := ImportDir(context.Background(), blobs, store.NewMemory(blobs), link, Limits{})
	if err != nil || len(m.Files) != 1 || m.Files[0].Path != "x/y.md" {
		t.Fatalf("symlinked root: %+v %v", m, err)
	}
}
