package assembly

import (
	"context"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/vfs"
)

func assemble(t *testing.T, blobs blob.Store, edges vfs.Edges, tr Tree, l Limits) *Instructions {
	t.Helper()
	in, err := AssembleTree(context.Background(), blobs, edges, tr, l)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func sourcePaths(in *Instructions) []string {
	var ps []string
	for _, s := range in.Sources {
		ps = append(ps, s.Path)
	}
	return ps
}

func TestInstructionOrder(t *testing.T) {
	blobs := blob.NewMemory()
	tr := tree(t, blobs, "/work", map[string]string{
		".agents/prompts/instructions.d/a.md":    "F",
		".agents/prompts/instructions.md":        "E",
		".cairn/prompts/instructions.d/b.md":     "D",
		".cairn/prompts/instructions.d/a.md":     "C",
		".cairn/prompts/instructions.d/Z.md":     "B", // byte order: "Z" < "a"
		".cairn/prompts/instructions.md":         "A",
		".cairn/prompts/instructions.d/x.txt":    "not markdown",
		".cairn/prompts/instructions.d/sub/n.md": "nested",
		".cairn/prompts/other.md":                "not a source",
		"prompts/instructions.md":                "not a root",
	})
	in := assemble(t, blobs, newEdges(t, blobs), tr, Limits{})
	if got := get(t, blobs, in.Text); got != "A\n\nB\n\nC\n\nD\n\nE\n\nF\n" {
		t.Fatalf("text = %q", got)
	}
	want := []string{
		"/work/.cairn/prompts/instructions.md",
		"/work/.cairn/prompts/instructions.d/Z.md",
		"/work/.cairn/prompts/instructions.d/a.md",
		"/work/.cairn/prompts/instructions.d/b.md",
		"/work/.agents/prompts/instructions.md",
		"/work/.agents/prompts/instructions.d/a.md",
	}
	if got := sourcePaths(in); !slices.Equal(got, want) {
		t.Fatalf("sources = %q, want %q", got, want)
	}
	if in.Text.MediaType != content.MediaText || in.TextBytes != int64(len("A\n\nB\n\nC\n\nD\n\nE\n\nF\n")) {
		t.Fatalf("text ref %+v, %d bytes", in.Text, in.TextBytes)
	}
	if len(in.Warnings) != 0 {
		t.Fatalf("warnings = %v", in.Warnings)
	}
}

func TestInstructionRootMount(t *testing.T) {
	blobs := blob.NewMemory()
	tr := tree(t, blobs, "/", map[string]string{".cairn/prompts/instructions.md": "A"})
	in := assemble(t, blobs, newEdges(t, blobs), tr, Limits{})
	if got := sourcePaths(in); !slices.Equal(got, []string{"/.cairn/prompts/instructions.md"}) {
		t.Fatalf("sources = %q", got)
	}
}

func TestOversizedSourceOmittedWhole(t *testing.T) {
	blobs := blob.NewMemory()
	big := "SECRET " + strings.Repeat("x", 100)
	tr := tree(t, blobs, "/work", map[string]string{
		".cairn/prompts/instructions.md":     "A",
		".cairn/prompts/instructions.d/a.md": big,
		".cairn/prompts/instructions.d/b.md": "B",
	})
	in := assemble(t, blobs, newEdges(t, blobs), tr, Limits{MaxSourceBytes: 50})
	text := get(t, blobs, in.Text)
	if text != "A\n\nB\n" {
		t.Fatalf("text = %q", text)
	}
	if strings.Contains(text, "SECRET") || strings.Contains(text, "xx") {
		t.Fatal("text holds part of the oversized source")
	}
	if len(in.Warnings) != 1 || in.Warnings[0].Path != "/work/.cairn/prompts/instructions.d/a.md" || !strings.Contains(in.Warnings[0].Message, "limit of 50 bytes") {
		t.Fatalf("warnings = %+v", in.Warnings)
	}
	if in.Sources[1].Included || !in.Sources[0].Included || !in.Sources[2].Included {
		t.Fatalf("sources = %+v", in.Sources)
	}
}

func TestDefaultSourceLimit(t *testing.T) {
	blobs := blob.NewMemory()
	tr := tree(t, blobs, "/work", map[string]string{
		".cairn/prompts/instructions.md": strings.Repeat("x", DefaultMaxSourceBytes+1),
	})
	in := assemble(t, blobs, newEdges(t, blobs), tr, Limits{})
	if !in.Text.Digest.IsZero() || in.Sources[0].Included || len(in.Warnings) != 1 {
		t.Fatalf("oversized default source included: %+v", in)
	}
}

func TestTotalLimitOmitsLaterSources(t *testing.T) {
	blobs := blob.NewMemory()
	tr := tree(t, blobs, "/work", map[string]string{
		".cairn/prompts/instructions.md":     "aaaaaa",
		".cairn/prompts/instructions.d/a.md": "bbbbbb", // 12 > 10: omitted
		".cairn/prompts/instructions.d/b.md": "c",      // would fit, omitted after the limit
	})
	in := assemble(t, blobs, newEdges(t, blobs), tr, Limits{MaxTotalBytes: 10})
	if got := get(t, blobs, in.Text); got != "aaaaaa\n" {
		t.Fatalf("text = %q", got)
	}
	if len(in.Warnings) != 2 || in.Warnings[0].Path != "/work/.cairn/prompts/instructions.d/a.md" || in.Warnings[1].Path != "/work/.cairn/prompts/instructions.d/b.md" {
		t.Fatalf("warnings = %+v", in.Warnings)
	}
}

func TestNonUTF8SourceOmitted(t *testing.T) {
	blobs := blob.NewMemory()
	tr := tree(t, blobs, "/work", map[string]string{
		".cairn/prompts/instructions.md":     "A",
		".cairn/prompts/instructions.d/a.md": "bad \xff byte",
	})
	in := assemble(t, blobs, newEdges(t, blobs), tr, Limits{})
	if got := get(t, blobs, in.Text); got != "A\n" {
		t.Fatalf("text = %q", got)
	}
	if len(in.Warnings) != 1 || !strings.Contains(in.Warnings[0].Message, "UTF-8") {
		t.Fatalf("warnings = %+v", in.Warnings)
	}
}

func TestReportContentsAndEdges(t *testing.T) {
	blobs := blob.NewMemory()
	edges := newEdges(t, blobs)
	tr := tree(t, blobs, "/work", map[string]string{
		".cairn/prompts/instructions.md":     "same\n",
		".agents/prompts/instructions.md":    "same\n", // equal bytes: one edge
		".cairn/prompts/instructions.d/a.md": strings.Repeat("y", 20),
	})
	in := assemble(t, blobs, edges, tr, Limits{MaxSourceBytes: 10})
	if in.Report.MediaType != ReportMediaType {
		t.Fatalf("report media type %q", in.Report.MediaType)
	}
	raw := get(t, blobs, in.Report)
	if canon, _ := content.Canonical([]byte(raw)); string(canon) != raw {
		t.Fatal("report is not canonical JSON")
	}
	if strings.Contains(raw, tr.Snapshot.String()) {
		t.Fatal("report names the snapshot digest")
	}
	r, err := ParseReport([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if r.Format != ReportFormat || r.Version != 1 || r.Mount != "/work" || r.Workspace != "ws" {
		t.Fatalf("report header %+v", r)
	}
	if r.Instructions == nil || *r.Instructions != in.Text {
		t.Fatalf("report instructions %v, want %v", r.Instructions, in.Text)
	}
	if !slices.Equal(r.Sources, in.Sources) || !slices.Equal(r.Warnings, in.Warnings) || len(r.Sources) != 3 {
		t.Fatalf("report sources %+v warnings %+v", r.Sources, r.Warnings)
	}
	e, _ := vfs.Lookup(tr.Manifest, ".cairn/prompts/instructions.d/a.md")
	if s := r.Sources[1]; s.Path != "/work/.cairn/prompts/instructions.d/a.md" || s.Included || s.Ref != e.Ref || s.Size != 20 {
		t.Fatalf("omitted source %+v", s)
	}
	var refs []content.ContentRef
	for _, s := range r.Sources {
		refs = append(refs, s.Ref)
	}
	want := digests(append(refs, in.Text)...)
	if got := edges.children(in.Report.Digest); !slices.Equal(got, want) || len(want) != 3 {
		t.Fatalf("edges = %v, want %v", got, want)
	}
	wantEdgesAreItsRefs(t, blobs, edges, in.Report)
}

func TestAllSourcesOmittedKeepsReport(t *testing.T) {
	blobs := blob.NewMemory()
	edges := newEdges(t, blobs)
	tr := tree(t, blobs, "/work", map[string]string{".cairn/prompts/instructions.md": "too long"})
	in := assemble(t, blobs, edges, tr, Limits{MaxSourceBytes: 3})
	if in == nil || !in.Text.Digest.IsZero() || in.TextBytes != 0 || len(in.Warnings) != 1 {
		t.Fatalf("instructions = %+v", in)
	}
	r, err := ParseReport([]byte(get(t, blobs, in.Report)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Instructions != nil || len(r.Warnings) != 1 {
		t.Fatalf("report = %+v", r)
	}
	if got := edges.children(in.Report.Digest); !slices.Equal(got, digests(in.Sources[0].Ref)) {
		t.Fatalf("edges = %v", got)
	}
}

func TestIdenticalSourcesIdenticalDigests(t *testing.T) {
	blobs := blob.NewMemory()
	files := map[string]string{
		".cairn/prompts/instructions.md":     "A",
		".cairn/prompts/instructions.d/a.md": "B",
	}
	t1 := tree(t, blobs, "/work", files)
	files["docs/unrelated.md"] = "changes the snapshot, not the sources"
	t2 := tree(t, blobs, "/work", files)
	t2.Snapshot = content.Sum([]byte("another snapshot"))
	a := assemble(t, blobs, newEdges(t, blobs), t1, Limits{})
	b := assemble(t, blobs, newEdges(t, blobs), t2, Limits{})
	if a.Text != b.Text || a.Report != b.Report {
		t.Fatalf("digests differ: %v %v / %v %v", a.Text, a.Report, b.Text, b.Report)
	}
	files[".cairn/prompts/instructions.d/a.md"] = "C"
	c := assemble(t, blobs, newEdges(t, blobs), tree(t, blobs, "/work", files), Limits{})
	if c.Report == a.Report || c.Text == a.Text {
		t.Fatal("a changed source kept the digests")
	}
}

func TestNoSourcesNoInstructions(t *testing.T) {
	blobs := blob.NewMemory()
	edges := newEdges(t, blobs)
	empty := tree(t, blobs, "/a", map[string]string{"README.md": "x", ".cairn/prompts/instructions.d/sub/n.md": "nested"})
	full := tree(t, blobs, "/b", map[string]string{".agents/prompts/instructions.md": "B"})
	if in := assemble(t, blobs, edges, empty, Limits{}); in != nil {
		t.Fatalf("tree without sources gave %+v", in)
	}
	all, err := AssembleInstructions(context.Background(), blobs, edges, []Tree{empty, full}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Mount != "/b" {
		t.Fatalf("AssembleInstructions = %+v", all)
	}
	u, _ := blobs.Usage(context.Background())
	if u.Blobs != 5 { // 3 files, 1 text, 1 report
		t.Fatalf("stored %d blobs", u.Blobs)
	}
}

func TestJoinSources(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"", "\n"}, ""},
		{[]string{"a"}, "a\n"},
		{[]string{"a\n\n\n", "b\r\n", "", "c"}, "a\n\nb\n\nc\n"},
		{[]string{"\n lead\n", "b"}, "\n lead\n\nb\n"},
	} {
		var in [][]byte
		for _, s := range c.in {
			in = append(in, []byte(s))
		}
		if got := string(JoinSources(in)); got != c.want {
			t.Errorf("JoinSources(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestPreviewBounded(t *testing.T) {
	blobs := blob.NewMemory()
	tr := tree(t, blobs, "/work", map[string]string{".cairn/prompts/instructions.md": "a" + strings.Repeat("é", 300)})
	in := assemble(t, blobs, newEdges(t, blobs), tr, Limits{})
	if len(in.Preview) > PreviewBytes+len("…") || !strings.HasSuffix(in.Preview, "…") || !strings.HasPrefix(in.Preview, "aéé") {
		t.Fatalf("preview %q (%d bytes)", in.Preview, len(in.Preview))
	}
	if !utf8.ValidString(in.Preview) {
		t.Fatal("preview cut inside a rune")
	}
}

func TestParseReportRejectsOtherFormats(t *testing.T) {
	for _, doc := range []string{
		`{"format":"cairn.skill-catalog","version":1}`,
		`{"format":"cairn.instruction-assembly","version":2}`,
		`{"format":"cairn.instruction-assembly","version":1,"extra":1}`,
		`{"format":"cairn.instruction-assembly","version":1} x`,
	} {
		if _, err := ParseReport([]byte(doc)); err == nil {
			t.Errorf("ParseReport(%s) succeeded", doc)
		}
	}
}
