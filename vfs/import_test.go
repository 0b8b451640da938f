package vfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
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
	m, ref, skipped, err := ImportDir(ctx, blobs, edges, dir, ImportOptions{})
	if err != nil || len(skipped) != 0 {
		t.Fatal(err, skipped)
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
	if _, _, _, err := ImportDir(ctx, blobs, edges, dir, ImportOptions{Limits: Limits{MaxFiles: 3}}); !errors.As(err, &le) || le.Limit != "files" {
		t.Fatalf("file limit: %v", err)
	}
	if _, _, _, err := ImportDir(ctx, blobs, edges, dir, ImportOptions{Limits: Limits{MaxFileBytes: 9}}); !errors.As(err, &le) || le.Limit != "file bytes" || le.Path != ".cairn/prompts/inst.md" {
		t.Fatalf("file size limit: %v", err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatalf("creating a symlink: %v", err) // Linux, the only platform tested, has them
	}
}

// importTree imports dir and returns its files (path → bytes) and what it
// skipped.
func importTree(t *testing.T, dir string, opt ImportOptions) (map[string]string, []Skipped) {
	t.Helper()
	blobs := blob.NewMemory()
	m, _, skipped, err := ImportDir(context.Background(), blobs, store.NewMemory(blobs), dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range m.Files {
		data, err := blobs.Get(context.Background(), e.Ref.Digest)
		if err != nil {
			t.Fatal(err)
		}
		files[e.Path] = string(data)
	}
	return files, skipped
}

// A symlink to a file inside the tree imports as that file's bytes; one
// that would read outside the tree, or that is not a file, is skipped and
// reported, and the rest of the tree still imports.
func TestImportDirSymlinks(t *testing.T) {
	outside := writeTree(t, map[string][]byte{"secret.txt": []byte("do not read")})
	dir := writeTree(t, map[string][]byte{"a.txt": []byte("a"), "sub/b.txt": []byte("b"), ".git/config": []byte("[core]")})
	symlink(t, "a.txt", filepath.Join(dir, "link.txt"))
	symlink(t, "../sub/b.txt", filepath.Join(dir, "sub", "up.txt"))
	symlink(t, filepath.Join(dir, "a.txt"), filepath.Join(dir, "abs.txt")) // absolute, but inside
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(dir, "out.txt"))
	symlink(t, "../"+filepath.Base(outside)+"/secret.txt", filepath.Join(dir, "rel-out.txt"))
	symlink(t, "sub", filepath.Join(dir, "dirlink"))
	symlink(t, "nothing-here", filepath.Join(dir, "dangling"))
	symlink(t, ".git/config", filepath.Join(dir, "gitconfig"))
	symlink(t, "/dev/null", filepath.Join(dir, "null"))

	files, skipped := importTree(t, dir, ImportOptions{})
	want := map[string]string{"a.txt": "a", "abs.txt": "a", "link.txt": "a", "sub/b.txt": "b", "sub/up.txt": "b"}
	if !reflect.DeepEqual(files, want) {
		t.Fatalf("imported %q\nwant     %q", files, want)
	}
	wantSkipped := []Skipped{
		{".git", SkipGit},
		{"dangling", SkipLinkBroken},
		{"dirlink", SkipLinkDir},
		{"gitconfig", SkipLinkSkipped},
		{"null", SkipLinkOutside},
		{"out.txt", SkipLinkOutside},
		{"rel-out.txt", SkipLinkOutside},
	}
	if !reflect.DeepEqual(skipped, wantSkipped) {
		t.Fatalf("skipped %v\nwant    %v", skipped, wantSkipped)
	}

	// The root itself may be a symlink.
	link := filepath.Join(t.TempDir(), "root")
	symlink(t, writeTree(t, map[string][]byte{"x/y.md": []byte("y")}), link)
	if files, _ := importTree(t, link, ImportOptions{}); !reflect.DeepEqual(files, map[string]string{"x/y.md": "y"}) {
		t.Fatalf("symlinked root: %q", files)
	}
}

// Git metadata is never imported, at any depth and in any case; an ignore
// file's patterns leave out what they match, with gitignore's meaning.
func TestImportDirSkipsGitAndIgnored(t *testing.T) {
	dir := writeTree(t, map[string][]byte{
		"keep.md":                 []byte("k"),
		".git/HEAD":               []byte("ref: refs/heads/main"),
		"vendor/lib/.git":         []byte("gitdir: ../../.git/modules/lib"), // a submodule's git file
		"vendor/lib/lib.go":       []byte("package lib"),
		"nested/.GIT/config":      []byte("[core]"),
		".gitignore":              []byte("x"),
		"build/out.bin":           []byte("o"),
		"logs/a.log":              []byte("l"),
		"src/debug.log":           []byte("d"),
		"src/keep.log":            []byte("kept by !"),
		"src/main.go":             []byte("package main"),
		"docs/build/index.html":   []byte("not the root build"),
		"node_modules/x/index.js": []byte("x"),
	})
	ignore := ParseIgnore([]byte("# build output\n/build/\n*.log\n!src/keep.log\n\nnode_modules/\r\n"))
	files, skipped := importTree(t, dir, ImportOptions{Ignore: ignore})
	want := map[string]string{
		"keep.md": "k", ".gitignore": "x", "vendor/lib/lib.go": "package lib", "src/keep.log": "kept by !",
		"src/main.go": "package main", "docs/build/index.html": "not the root build",
	}
	if !reflect.DeepEqual(files, want) {
		t.Fatalf("imported %q\nwant     %q", files, want)
	}
	wantSkipped := []Skipped{
		{".git", SkipGit},
		{"build", SkipIgnored},
		{"logs/a.log", SkipIgnored},
		{"nested/.GIT", SkipGit},
		{"node_modules", SkipIgnored},
		{"src/debug.log", SkipIgnored},
		{"vendor/lib/.git", SkipGit},
	}
	if !reflect.DeepEqual(skipped, wantSkipped) {
		t.Fatalf("skipped %v\nwant    %v", skipped, wantSkipped)
	}
}

// A special file is refused, not skipped: the tree could not be reproduced.
func TestImportDirRefusesSpecialFiles(t *testing.T) {
	dir := writeTree(t, map[string][]byte{"a.txt": []byte("a")})
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	blobs := blob.NewMemory()
	var ue *UnsupportedFileError
	if _, _, _, err := ImportDir(context.Background(), blobs, store.NewMemory(blobs), dir, ImportOptions{}); !errors.As(err, &ue) || ue.Path != "pipe" {
		t.Fatalf("got %v, want UnsupportedFileError for pipe", err)
	}
}
