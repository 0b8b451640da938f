package main

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
)

// Re-importing a directory keeps what an agent wrote into the workspace and
// says so; --delete removes it and lists it; diff shows both beforehand; a
// stale --expected-revision refuses before anything changes.
func TestVFSImportKeepsTheWorkspacesOwnFiles(t *testing.T) {
	s := startVFSServer(t)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"a.txt": "a", "b.txt": "b"})
	s.mustCairn(t, "vfs", "import", src, "--workspace", "w2")

	// The agent writes a file; the user edits one and adds another locally.
	c := api.NewClient(s.url, nil)
	if _, err := c.WriteFile(context.Background(), api.FileWriteParams{Workspace: "w2", Path: "notes/agent.txt", Data: []byte("agent's work")}); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, src, map[string]string{"b.txt": "b2", "c.txt": "c"})

	diff := s.mustCairn(t, "vfs", "diff", src, "--workspace", "w2")
	for _, line := range []string{"+ c.txt", "~ b.txt", "= notes/agent.txt",
		"import would add 1, change 1 and remove 0 files; 1 files only in the workspace stay"} {
		if !strings.Contains(diff, line+"\n") {
			t.Errorf("diff lacks %q:\n%s", line, diff)
		}
	}
	if strings.Contains(diff, "a.txt") {
		t.Errorf("diff names an unchanged file:\n%s", diff)
	}

	// A stale revision refuses, and the workspace stays at revision 2.
	_, err := s.cairn(t, "vfs", "import", src, "--workspace", "w2", "--expected-revision", "1")
	if err == nil || !strings.Contains(err.Error(), "workspace w2 is at revision 2, not 1 (--expected-revision)") {
		t.Fatalf("a stale --expected-revision: %v", err)
	}
	if _, err := s.cairn(t, "vfs", "import", src, "--workspace", "new", "--expected-revision", "3"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("--expected-revision of an absent workspace: %v", err)
	}

	out := s.mustCairn(t, "vfs", "import", src, "--workspace", "w2", "--expected-revision", "2")
	if !strings.Contains(out, "workspace w2 revision 3: 4 files") || !strings.Contains(out, "kept 1 files only in the workspace (import with --delete to remove them):\n  notes/agent.txt\n") {
		t.Fatalf("re-import:\n%s", out)
	}
	got, err := c.ReadFile(context.Background(), api.FileParams{Workspace: "w2", Path: "notes/agent.txt"})
	if err != nil || string(got.Data) != "agent's work" {
		t.Fatalf("the agent's file after a re-import: %+v, %v", got, err)
	}
	if out := s.mustCairn(t, "vfs", "import", src, "--workspace", "w2"); !strings.Contains(out, "already holds") {
		t.Fatalf("an import with only kept files left over changed something:\n%s", out)
	}

	out = s.mustCairn(t, "vfs", "import", src, "--workspace", "w2", "--delete")
	if !strings.Contains(out, "workspace w2 revision 4: 3 files") || !strings.Contains(out, "removed 1 files only in the workspace (--delete):\n  notes/agent.txt\n") {
		t.Fatalf("import --delete:\n%s", out)
	}
	dst := t.TempDir()
	s.mustCairn(t, "vfs", "export", "--workspace", "w2", dst)
	if got, want := readTree(t, dst), map[string]string{"a.txt": "a", "b.txt": "b2", "c.txt": "c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after --delete the workspace holds %q, want %q", got, want)
	}
	if out := s.mustCairn(t, "vfs", "diff", src, "--workspace", "w2"); out != "no differences\n" {
		t.Fatalf("diff after import:\n%s", out)
	}
}

// A workspace file that cannot sit beside the directory's tree (the
// directory has a file where the workspace has a directory) is not dropped
// silently: the import refuses and names --delete.
func TestVFSImportRefusesToDropAClashingFile(t *testing.T) {
	s := startVFSServer(t)
	first := t.TempDir()
	writeFiles(t, first, map[string]string{"out/report.md": "r"})
	s.mustCairn(t, "vfs", "import", first, "--workspace", "w")
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"out": "a file now"})
	_, err := s.cairn(t, "vfs", "import", src, "--workspace", "w")
	if err == nil || !strings.Contains(err.Error(), "out/report.md cannot be kept next to the directory's out") || !strings.Contains(err.Error(), "--delete") {
		t.Fatalf("a clashing import: %v", err)
	}
	out := s.mustCairn(t, "vfs", "import", src, "--workspace", "w", "--delete")
	if !strings.Contains(out, "removed 1 files") {
		t.Fatalf("import --delete over a clash:\n%s", out)
	}
}

// Paths the import leaves out (here by --ignore-file) say nothing about the
// workspace's copies: even --delete keeps them.
func TestVFSImportDeleteKeepsLeftOutPaths(t *testing.T) {
	s := startVFSServer(t)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"a.txt": "a", "build/out.bin": "x", ".ignore": "build/\n"})
	s.mustCairn(t, "vfs", "import", src, "--workspace", "w")
	out := s.mustCairn(t, "vfs", "import", src, "--workspace", "w", "--delete", "--ignore-file", src+"/.ignore")
	if !strings.Contains(out, "already holds") || !strings.Contains(out, "kept 1 files only in the workspace") {
		t.Fatalf("import --delete with build/ ignored:\n%s", out)
	}
}
