package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// vfsServer is an embedded server (SQLite in a temporary directory) serving
// JSON-RPC in this process.
type vfsServer struct {
	url string
	st  *stack
}

func startVFSServer(t *testing.T) *vfsServer {
	t.Helper()
	st, err := openStack(context.Background(), t.TempDir(), hostOptions{logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.NewServer(st.host, api.ServerOptions{APIKinds: st.kinds}).Handler())
	t.Cleanup(func() { srv.Close(); st.close() })
	return &vfsServer{url: srv.URL, st: st}
}

// cairn runs the binary's root command against the server. --addr points
// nowhere, so passing means --server won.
func (s *vfsServer) cairn(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := rootCommand()
	root.SetArgs(append(args, "--server", s.url, "--addr", "127.0.0.1:1"))
	root.SetOut(&out)
	root.SetErr(io.Discard)
	err := root.ExecuteContext(demoContext(t))
	return out.String(), err
}

func (s *vfsServer) mustCairn(t *testing.T, args ...string) string {
	t.Helper()
	out, err := s.cairn(t, args...)
	if err != nil {
		t.Fatalf("cairn %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (s *vfsServer) blobCount(t *testing.T) int64 {
	t.Helper()
	u, err := s.st.store.Usage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return u.Blobs
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree returns every regular file under dir by slash path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var uploadedLine = regexp.MustCompile(`(?m)^uploaded (\d+) new blobs \((\d+) bytes\), reused (\d+) files \((\d+) bytes\)$`)

func uploads(t *testing.T, out string) []string {
	t.Helper()
	m := uploadedLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("import printed no upload summary:\n%s", out)
	}
	return m[1:]
}

func TestVFSImportExportRoundTrip(t *testing.T) {
	s := startVFSServer(t)
	src := t.TempDir()
	files := map[string]string{
		"README.md":           "# Acorn\n",
		"docs/guide.md":       "Read me first.\n",
		"docs/deep/nested.go": "package deep\n",
		"copy/of-readme.md":   "# Acorn\n", // same bytes as README.md: one blob
		"empty.txt":           "",
		"bin/data.bin":        "\x00\x01\x02\xff",
	}
	writeFiles(t, src, files)

	out := s.mustCairn(t, "vfs", "import", src, "--workspace", "acorn")
	if !strings.Contains(out, "workspace acorn revision 1: 6 files, 48 bytes") {
		t.Fatalf("first import:\n%s", out)
	}
	if got := uploads(t, out); !reflect.DeepEqual(got, []string{"5", "40", "1", "8"}) {
		t.Fatalf("first import uploaded/reused %v, want 5 blobs of 40 bytes and 1 reused file of 8", got)
	}

	dst := t.TempDir()
	s.mustCairn(t, "vfs", "export", "--workspace", "acorn", dst)
	if got := readTree(t, dst); !reflect.DeepEqual(got, files) {
		t.Fatalf("exported tree %q\nwant %q", got, files)
	}
	if _, err := s.cairn(t, "vfs", "export", "--workspace", "acorn", dst); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("export into a non-empty directory: %v", err)
	}
	s.mustCairn(t, "vfs", "export", "--workspace", "acorn", "--force", dst)

	// Editing one file uploads exactly that file's blob (plus the manifest
	// the commit stores).
	files["docs/guide.md"] = "Read me second.\n"
	writeFiles(t, src, files)
	before := s.blobCount(t)
	out = s.mustCairn(t, "vfs", "import", src, "--workspace", "acorn")
	if got := uploads(t, out); !reflect.DeepEqual(got, []string{"1", "16", "5", "33"}) {
		t.Fatalf("re-import uploaded/reused %v, want 1 blob of 16 bytes and 5 reused files of 33:\n%s", got, out)
	}
	if !strings.Contains(out, "workspace acorn revision 2:") {
		t.Fatalf("re-import:\n%s", out)
	}
	if after := s.blobCount(t); after != before+2 {
		t.Fatalf("the server holds %d blobs, had %d: want one file and one manifest more", after, before)
	}
	// Importing the same tree again changes nothing.
	out = s.mustCairn(t, "vfs", "import", src, "--workspace", "acorn")
	if !strings.Contains(out, "already holds") || s.blobCount(t) != before+2 {
		t.Fatalf("unchanged re-import:\n%s", out)
	}

	out = s.mustCairn(t, "vfs", "snapshot", "--workspace", "acorn")
	digest := regexp.MustCompile(`sha256:[0-9a-f]{64}`).FindString(out)
	if digest == "" || !strings.Contains(out, "6 files") {
		t.Fatalf("snapshot printed:\n%s", out)
	}
	snapDir := filepath.Join(t.TempDir(), "new")
	s.mustCairn(t, "vfs", "export", "--snapshot", digest, snapDir)
	if got := readTree(t, snapDir); !reflect.DeepEqual(got, files) {
		t.Fatalf("exported snapshot %q\nwant %q", got, files)
	}

	if got := s.mustCairn(t, "vfs", "cat", "--workspace", "acorn", "docs/guide.md"); got != files["docs/guide.md"] {
		t.Fatalf("cat printed %q", got)
	}
	if got := s.mustCairn(t, "vfs", "cat", "--snapshot", digest, "bin/data.bin"); got != files["bin/data.bin"] {
		t.Fatalf("cat of a snapshot printed %q", got)
	}
	list := s.mustCairn(t, "vfs", "workspaces")
	if !regexp.MustCompile(`(?m)^acorn\s+2\s+sha256:`).MatchString(list) {
		t.Fatalf("workspaces:\n%s", list)
	}
}

// An import leaves out git metadata and what --ignore-file matches,
// imports a symlink to a file inside the tree as that file, skips one
// pointing outside, and says so for each.
func TestVFSImportSkipsGitIgnoredAndOutsideLinks(t *testing.T) {
	s := startVFSServer(t)
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"id_rsa": "PRIVATE KEY"})
	src := t.TempDir()
	writeFiles(t, src, map[string]string{
		"a.txt": "a", ".git/config": "[core]\n\tfsmonitor = touch /tmp/pwned\n", ".gitignore": "*.log\n",
		"debug.log": "noise", "logs/x.log": "more noise",
	})
	for target, link := range map[string]string{"a.txt": "inside.txt", filepath.Join(outside, "id_rsa"): "key"} {
		if err := os.Symlink(target, filepath.Join(src, link)); err != nil {
			t.Fatal("creating a symlink (every supported OS has them):", err)
		}
	}
	out := s.mustCairn(t, "vfs", "import", src, "--workspace", "w", "--ignore-file", filepath.Join(src, ".gitignore"))
	for _, line := range []string{"skipped .git: git metadata", "skipped key: symlink pointing outside the tree",
		"skipped 2 paths matched by --ignore-file", "workspace w revision 1: 3 files, 8 bytes"} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("import output lacks %q:\n%s", line, out)
		}
	}
	dst := t.TempDir()
	s.mustCairn(t, "vfs", "export", "--workspace", "w", dst)
	if got, want := readTree(t, dst), map[string]string{"a.txt": "a", "inside.txt": "a", ".gitignore": "*.log\n"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("imported tree %q, want %q", got, want)
	}
	if _, err := s.cairn(t, "vfs", "import", src, "--workspace", "w", "--ignore-file", filepath.Join(src, "absent")); err == nil || !strings.Contains(err.Error(), "--ignore-file") {
		t.Fatalf("a missing ignore file: %v", err)
	}
}

// An import commits on the revision it read: a write landing on the server
// meanwhile makes the commit a conflict instead of being overwritten.
func TestVFSImportDoesNotOverwriteAConcurrentChange(t *testing.T) {
	s := startVFSServer(t)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"a.txt": "a"})
	s.mustCairn(t, "vfs", "import", src, "--workspace", "w")

	// Someone writes to the workspace while the next import uploads.
	rpc := api.NewServer(s.st.host, api.ServerOptions{APIKinds: s.st.kinds}).Handler()
	other := api.NewClient(s.url, nil)
	var once sync.Once
	var writeErr error
	racing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"blobs/missing"`) {
			once.Do(func() {
				_, writeErr = other.WriteFile(r.Context(), api.FileWriteParams{Workspace: "w", Path: "theirs.txt", Data: []byte("keep me")})
			})
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rpc.ServeHTTP(w, r)
	}))
	t.Cleanup(racing.Close)

	writeFiles(t, src, map[string]string{"a.txt": "mine"})
	_, err := (&vfsServer{url: racing.URL, st: s.st}).cairn(t, "vfs", "import", src, "--workspace", "w")
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	if !isKind(err, core.RejectRevisionConflict) {
		t.Fatalf("import over a concurrent write: %v, want a revision conflict", err)
	}
	got, err := other.ReadFile(context.Background(), api.FileParams{Workspace: "w", Path: "theirs.txt"})
	if err != nil || string(got.Data) != "keep me" {
		t.Fatalf("the concurrent write was lost: %+v, %v", got, err)
	}
}
