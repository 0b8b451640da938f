package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/vfs"
)

// dirState describes everything under dir (files with their bytes and
// mode, directories, symlinks with their targets), to compare before and
// after.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			out[rel] = "symlink to " + target
			return err
		case d.IsDir():
			out[rel] = "dir " + info.Mode().Perm().String()
		default:
			data, err := os.ReadFile(p)
			out[rel] = info.Mode().Perm().String() + " " + string(data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// workspaceOf commits files to workspace name through the API, as a model's
// writes would land (so .git paths too).
func (s *vfsServer) workspaceOf(t *testing.T, name string, files map[string]string) {
	t.Helper()
	c := api.NewClient(s.url, nil)
	for p, data := range files {
		if _, err := c.WriteFile(context.Background(), api.FileWriteParams{Workspace: name, Path: p, Data: []byte(data)}); err != nil {
			if _, err := c.CreateWorkspace(context.Background(), api.WorkspaceCreateParams{Workspace: name}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.WriteFile(context.Background(), api.FileWriteParams{Workspace: name, Path: p, Data: []byte(data)}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A symlink in the target is never written through nor replaced, with
// --force too: the export is refused before anything is written.
func TestVFSExportNeverFollowsSymlinks(t *testing.T) {
	s := startVFSServer(t)
	s.workspaceOf(t, "w", map[string]string{"docs/x.md": "x", "a.txt": "a"})
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"victim.txt": "precious"})
	for name, link := range map[string]struct{ path, target string }{
		"a parent":  {"docs", outside},
		"the file":  {"a.txt", filepath.Join(outside, "victim.txt")},
		"relative":  {"docs", ""}, // filled in below: a relative path to outside
		"in-target": {"a.txt", "real.txt"},
	} {
		t.Run(name, func(t *testing.T) {
			dst := t.TempDir()
			writeFiles(t, dst, map[string]string{"real.txt": "mine"})
			if link.target == "" {
				rel, err := filepath.Rel(dst, outside)
				if err != nil {
					t.Fatal(err)
				}
				link.target = rel
			}
			if err := os.Symlink(link.target, filepath.Join(dst, link.path)); err != nil {
				t.Fatal(err)
			}
			before, outBefore := dirState(t, dst), dirState(t, outside)
			_, err := s.cairn(t, "vfs", "export", "--workspace", "w", "--force", dst)
			if err == nil || !strings.Contains(err.Error(), "symlink") {
				t.Fatalf("export over a symlinked %s: %v", link.path, err)
			}
			if after := dirState(t, dst); !reflect.DeepEqual(after, before) {
				t.Fatalf("the target changed:\nbefore %q\nafter  %q", before, after)
			}
			if after := dirState(t, outside); !reflect.DeepEqual(after, outBefore) {
				t.Fatalf("a directory outside the target changed:\nbefore %q\nafter  %q", outBefore, after)
			}
		})
	}
}

// Files the model wrote under .git are never exported: into a checkout they
// would be its configuration and hooks.
func TestVFSExportNeverWritesGitMetadata(t *testing.T) {
	s := startVFSServer(t)
	s.workspaceOf(t, "w", map[string]string{
		"README.md": "hello", ".git/config": "[core]\n\tfsmonitor = touch /tmp/pwned\n",
		"sub/.git/hooks/post-checkout": "#!/bin/sh\n", "x/.GIT/config": "[core]",
	})
	dst := t.TempDir()
	writeFiles(t, dst, map[string]string{".git/config": "[core]\n\tbare = false\n", ".git/HEAD": "ref: refs/heads/main\n"})
	out := s.mustCairn(t, "vfs", "export", "--workspace", "w", "--force", dst)
	want := map[string]string{".git/config": "[core]\n\tbare = false\n", ".git/HEAD": "ref: refs/heads/main\n", "README.md": "hello"}
	if got := readTree(t, dst); !reflect.DeepEqual(got, want) {
		t.Fatalf("exported %q\nwant %q", got, want)
	}
	for _, line := range []string{"skipped .git: git metadata is never exported", "skipped sub/.git: git metadata is never exported",
		"skipped x/.GIT: git metadata is never exported", "exported 1 files (5 bytes)"} {
		if !strings.Contains(out, line) {
			t.Errorf("export output lacks %q:\n%s", line, out)
		}
	}
}

// An export that fails leaves the target as it was: an existing directory
// (--force) keeps its files, modes and bytes; a new one is not created.
func TestVFSExportFailureLeavesTheTargetAsItWas(t *testing.T) {
	s := startVFSServer(t)
	s.workspaceOf(t, "w", map[string]string{"a.txt": "new a", "b/c.txt": "new c", "keep/d.txt": "new d", "z.txt": "z"})

	dst := t.TempDir()
	writeFiles(t, dst, map[string]string{"a.txt": "old a", "keep/e.txt": "mine", "untouched.txt": "u"})
	if err := os.Chmod(filepath.Join(dst, "a.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, dst)
	beforeInstall = func(p string) error {
		if p == "z.txt" { // after a.txt was replaced, b/ made and keep/d.txt added
			return errors.New("disk on fire")
		}
		return nil
	}
	t.Cleanup(func() { beforeInstall = func(string) error { return nil } })
	if _, err := s.cairn(t, "vfs", "export", "--workspace", "w", "--force", dst); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("export with a failing install: %v", err)
	}
	if after := dirState(t, dst); !reflect.DeepEqual(after, before) {
		t.Fatalf("a failed export changed the target:\nbefore %q\nafter  %q", before, after)
	}

	// Without the failure the same export lands, and a replaced file keeps its mode.
	beforeInstall = func(string) error { return nil }
	s.mustCairn(t, "vfs", "export", "--workspace", "w", "--force", dst)
	got := dirState(t, dst)
	if got["a.txt"] != "-rwxr-xr-x new a" || got["keep/e.txt"] != "-rw-r--r-- mine" || got["z.txt"] != "-rw-r--r-- z" || len(got) != 9 {
		t.Fatalf("exported over the target: %q", got)
	}

	// A failure while fetching: a new target is not left behind.
	var reads atomic.Int32
	rpc := api.NewServer(s.st.host, api.ServerOptions{APIKinds: s.st.kinds}).Handler()
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"blobs/read"`) && reads.Add(1) == 3 {
			http.Error(w, "gone", http.StatusBadGateway)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rpc.ServeHTTP(w, r)
	}))
	t.Cleanup(flaky.Close)
	fresh := filepath.Join(t.TempDir(), "new", "out")
	if _, err := (&vfsServer{url: flaky.URL, st: s.st}).cairn(t, "vfs", "export", "--workspace", "w", fresh); err == nil {
		t.Fatal("an export whose fetch failed succeeded")
	}
	if _, err := os.Lstat(filepath.Dir(fresh)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a failed export left %s behind: %v", filepath.Dir(fresh), err)
	}
}

// A tree stored before the 255-byte name rule is refused before anything
// is written, not halfway through.
func TestVFSExportRefusesLongNamesUpFront(t *testing.T) {
	s := startVFSServer(t)
	s.workspaceOf(t, "w", map[string]string{"a.txt": "a"})
	ctx := context.Background()
	w, err := s.st.store.Workspace(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	m, err := vfs.ReadManifest(ctx, s.st.store, w.Head)
	if err != nil {
		t.Fatal(err)
	}
	long := vfs.Entry{Path: "z/" + strings.Repeat("n", 256), Ref: m.Files[0].Ref, Size: 1}
	stored := vfs.Manifest{Files: append(m.Files, long), Totals: vfs.Totals{Files: 2, Bytes: 2}}
	ref, err := vfs.WriteManifest(ctx, s.st.store, s.st.store, stored)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.st.store.MoveHead(ctx, "w", w.Revision, ref.Digest); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if _, err := s.cairn(t, "vfs", "export", "--workspace", "w", dst); err == nil || !strings.Contains(err.Error(), "segment bytes 256 > max 255") {
		t.Fatalf("export of a long name: %v", err)
	}
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused export created %s: %v", dst, err)
	}
}
