package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store/sqlite"
	"github.com/cairn-agents/cairn/vfs"
)

var (
	summaryLine = regexp.MustCompile(`^summary: session acorn-release-notes, (\d+) events, (\d+) context entries \(revision (\d+)\), (\d+) blobs, (\d+) bytes$`)
	runIDs      = regexp.MustCompile(`run_[0-9a-f]{16}`)
	compactIDs  = regexp.MustCompile(`cmp_[0-9a-f]{16}`)
)

func demoContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func playDemo(t *testing.T, dir string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := runDemo(demoContext(t), &buf, dir); err != nil {
		t.Fatalf("runDemo: %v\noutput so far:\n%s", err, buf.String())
	}
	return buf.String()
}

// demoSummary is the demo's last line, parsed.
type demoSummary struct{ events, entries, revision, blobs, bytes int64 }

func parseSummary(t *testing.T, out string) demoSummary {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	last := lines[len(lines)-1]
	m := summaryLine.FindStringSubmatch(last)
	if m == nil {
		t.Fatalf("last line %q is not the summary", last)
	}
	n := make([]int64, 5)
	for i := range n {
		v, err := strconv.ParseInt(m[i+1], 10, 64)
		if err != nil || v <= 0 {
			t.Fatalf("summary figure %q in %q must be positive", m[i+1], last)
		}
		n[i] = v
	}
	return demoSummary{n[0], n[1], n[2], n[3], n[4]}
}

// at returns where s first occurs in out, failing the test if it does not.
func at(t *testing.T, out, s string) int {
	t.Helper()
	i := strings.Index(out, s)
	if i < 0 {
		t.Fatalf("demo output lacks %q:\n%s", s, out)
	}
	return i
}

func TestDemoPlaysTheRecordedSession(t *testing.T) {
	dir := t.TempDir()
	out := playDemo(t, dir)

	at(t, out, "RECORDED")
	at(t, out, "data: "+dir+"\n")
	if n := strings.Count(out, "assistant>\n"); n != 2 {
		t.Fatalf("%d answers, want 2:\n%s", n, out)
	}
	if n := len(runIDs.FindAllString(out, -1)); n != 2 {
		t.Fatalf("%d run ids in the output, want 2 (one per run)", n)
	}
	// The import, the request, the steering (during turn 1), the changelog
	// read, the steering entering context at turn 2, the draft written to the
	// workspace, the follow-up and its edit, then the file as it ended up and
	// the instructions' assembly report, in that order.
	order := []int{
		at(t, out, "workspace acorn revision 1: 5 files"),
		at(t, out, "(skill release-notes is active for this run)"),
		at(t, out, "user> "+demoRequest),
		at(t, out, `[steer] "`+demoSteering+`"`),
		at(t, out, "tool call vfs_read_file"),
		at(t, out, "result vfs_read_file: Acorn 2.0 changelog"),
		at(t, out, "user> "+demoSteering),
		at(t, out, "[turn 2] tool call vfs_write_file"),
		at(t, out, `workspace "acorn" is now at revision 2`),
		at(t, out, "user> "+demoFollowUp),
		at(t, out, "tool call vfs_edit_file"),
		at(t, out, `workspace "acorn" is now at revision 3`),
		at(t, out, "$ cairn context compact "+demoSession),
		at(t, out, "replaced 14 entries with 1"),
		at(t, out, "compaction completed: context revision 14, 3 entries"),
		at(t, out, "workspace acorn is at revision 3; /work/RELEASE_NOTES.md"),
		at(t, out, "\n  **Upgrading?**"),
		at(t, out, "\n  ## Thanks"),
		at(t, out, "instructions instructions.vfs:/work"),
		at(t, out, "/work/.cairn/prompts/instructions.md (296 bytes, included: true)"),
		at(t, out, "/work/.cairn/prompts/instructions.d/10-style.md"),
	}
	for i := 1; i < len(order); i++ {
		if order[i-1] >= order[i] {
			t.Fatalf("demo output out of order at step %d:\n%s", i, out)
		}
	}
	if n := strings.Count(out, "run completed\n"); n != 2 {
		t.Fatalf("%d completed runs, want 2", n)
	}
	parseSummary(t, out)
}

// The file the model wrote is a real workspace file: exporting the workspace
// from the kept store gives it back.
func TestDemoNotesAreInTheWorkspace(t *testing.T) {
	dir := t.TempDir()
	playDemo(t, dir)
	st, err := sqlite.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w, err := st.Workspace(context.Background(), demoWorkspaceName)
	if err != nil || w.Revision != 3 {
		t.Fatalf("workspace %+v %v, want revision 3 (import, write, edit)", w, err)
	}
	m, err := vfs.ReadManifest(context.Background(), st, w.Head)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := vfs.Lookup(m, "RELEASE_NOTES.md")
	if !ok {
		t.Fatalf("the workspace has no RELEASE_NOTES.md: %+v", m.Files)
	}
	data, err := st.Get(context.Background(), e.Ref.Digest)
	if err != nil || !strings.HasPrefix(string(data), "# Acorn 2.0 release notes") || !strings.Contains(string(data), "## Thanks") {
		t.Fatalf("RELEASE_NOTES.md = %q (%v)", data, err)
	}
}

func TestDemoIsDeterministicApartFromRunIDs(t *testing.T) {
	normalize := func(out, dir string) string {
		out = compactIDs.ReplaceAllString(strings.ReplaceAll(out, dir, "DATA"), "cmp_ID")
		return runIDs.ReplaceAllString(out, "run_ID")
	}
	dirA, dirB := t.TempDir(), t.TempDir()
	a := normalize(playDemo(t, dirA), dirA)
	b := normalize(playDemo(t, dirB), dirB)
	if a != b {
		al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
		for i := 0; i < min(len(al), len(bl)); i++ {
			if al[i] != bl[i] {
				t.Fatalf("demo outputs differ at line %d:\n%q\n%q", i+1, al[i], bl[i])
			}
		}
		t.Fatalf("demo outputs differ in length: %d and %d lines", len(al), len(bl))
	}
}

// `cairn demo --data DIR` keeps the session in DIR, readable afterwards.
func TestDemoCommandKeepsDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kept")
	var out bytes.Buffer
	root := rootCommand()
	root.SetArgs([]string{"demo", "--data", dir})
	root.SetOut(&out)
	root.SetErr(&out)
	if err := root.ExecuteContext(demoContext(t)); err != nil {
		t.Fatalf("cairn demo --data: %v\n%s", err, out.String())
	}
	sum := parseSummary(t, out.String())
	if _, err := os.Stat(filepath.Join(dir, "cairn.db")); err != nil {
		t.Fatalf("the data directory lost its database: %v", err)
	}

	st, err := sqlite.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	life, err := st.Session(context.Background(), demoSession)
	if err != nil {
		t.Fatalf("the kept store has no demo session: %v", err)
	}
	if life.Head != sum.events || life.Status != core.SessionStatusOpen || life.LastRunStatus != core.StatusCompleted || life.Unfinished() {
		t.Fatalf("kept session = %+v, summary said %d events", life, sum.events)
	}
	usage, err := st.Usage(context.Background())
	if err != nil || usage.Blobs != sum.blobs || usage.Bytes != sum.bytes {
		t.Fatalf("kept blobs %+v (%v), summary said %d blobs, %d bytes", usage, err, sum.blobs, sum.bytes)
	}
}

// Without --data the demo works in a temporary directory and removes it.
func TestDemoCommandRemovesItsTemporaryData(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var out bytes.Buffer
	root := rootCommand()
	root.SetArgs([]string{"demo"})
	root.SetOut(&out)
	root.SetErr(&out)
	if err := root.ExecuteContext(demoContext(t)); err != nil {
		t.Fatalf("cairn demo: %v\n%s", err, out.String())
	}
	m := regexp.MustCompile(`(?m)^data: (.+)$`).FindStringSubmatch(out.String())
	if m == nil || !strings.HasPrefix(m[1], tmp) {
		t.Fatalf("demo data line %q, want a directory under %s", m, tmp)
	}
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Fatalf("temporary data %s still exists (%v)", m[1], err)
	}
	parseSummary(t, out.String())
}
