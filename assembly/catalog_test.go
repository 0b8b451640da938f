package assembly

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/vfs"
)

func skill(name, desc string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n# " + name + "\nbody of " + name + "\n"
}

func buildSkills(t *testing.T, blobs blob.Store, edges vfs.Edges, trees ...Tree) (*Catalog, []Warning) {
	t.Helper()
	c, w, err := BuildSkillCatalog(context.Background(), blobs, edges, trees, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}

func names(c *Catalog) []string {
	var ns []string
	for _, it := range c.Items {
		ns = append(ns, it.Name)
	}
	return ns
}

func warnedPaths(ws []Warning) []string {
	var ps []string
	for _, w := range ws {
		ps = append(ps, w.Path)
	}
	return ps
}

func TestSkillCatalogSortedByName(t *testing.T) {
	blobs := blob.NewMemory()
	edges := newEdges(t, blobs)
	tr := tree(t, blobs, "/work", map[string]string{
		".cairn/skills/zeta/SKILL.md":    skill("zeta", "last"),
		".cairn/skills/deep/er/SKILL.md": skill("alpha", "first, found at depth"),
		".agents/skills/mid/SKILL.md":    skill("Mid", "upper case sorts first"),
		".cairn/skills/zeta/notes.md":    skill("notes", "not a SKILL.md"),
		".cairn/skills/zeta/skill.md":    skill("lower", "wrong case"),
		"skills/other/SKILL.md":          skill("other", "not under a root"),
	})
	c, w := buildSkills(t, blobs, edges, tr)
	if len(w) != 0 {
		t.Fatalf("warnings = %+v", w)
	}
	if got := names(c); !slices.Equal(got, []string{"Mid", "alpha", "zeta"}) {
		t.Fatalf("names = %q", got)
	}
	want := SkillCatalogHeader + "\n" +
		"- Mid: upper case sorts first (/work/.agents/skills/mid/SKILL.md)\n" +
		"- alpha: first, found at depth (/work/.cairn/skills/deep/er/SKILL.md)\n" +
		"- zeta: last (/work/.cairn/skills/zeta/SKILL.md)\n"
	if got := get(t, blobs, c.Text); got != want {
		t.Fatalf("text = %q\nwant %q", got, want)
	}
	if !strings.Contains(SkillCatalogHeader, "vfs_read_file") || !strings.Contains(SkillCatalogHeader, "SKILL.md") || strings.Contains(SkillCatalogHeader, "\n") {
		t.Fatal("header must be one line pointing at vfs_read_file")
	}
	if c.Text.MediaType != content.MediaText || c.Doc.MediaType != SkillCatalogMediaType || c.Format != SkillCatalogFormat {
		t.Fatalf("catalog refs %+v %+v", c.Text, c.Doc)
	}
}

func TestSkillCatalogDocumentAndEdges(t *testing.T) {
	blobs := blob.NewMemory()
	edges := newEdges(t, blobs)
	tr := tree(t, blobs, "/work", map[string]string{
		".cairn/skills/b/SKILL.md": skill("b", "B"),
		".cairn/skills/a/SKILL.md": skill("a", "A"),
		".cairn/skills/c/SKILL.md": "no frontmatter",
	})
	c, _ := buildSkills(t, blobs, edges, tr)
	raw := get(t, blobs, c.Doc)
	if canon, _ := content.Canonical([]byte(raw)); string(canon) != raw {
		t.Fatal("catalog is not canonical JSON")
	}
	if !strings.Contains(raw, `"format":"cairn.skill-catalog"`) || !strings.Contains(raw, `"skills":[`) || strings.Contains(raw, `"agents"`) {
		t.Fatalf("catalog document %s", raw)
	}
	parsed, err := ParseSkillCatalog([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(parsed.Items, c.Items) || !slices.Equal(parsed.Warnings, c.Warnings) || parsed.Text != c.Text || len(parsed.Warnings) != 1 {
		t.Fatalf("parsed %+v\nbuilt %+v", parsed, c)
	}
	it, ok := parsed.Find("b")
	ea, _ := vfs.Lookup(tr.Manifest, ".cairn/skills/a/SKILL.md")
	eb, _ := vfs.Lookup(tr.Manifest, ".cairn/skills/b/SKILL.md")
	if !ok || it.Path != "/work/.cairn/skills/b/SKILL.md" || it.Ref != eb.Ref || it.Description != "B" {
		t.Fatalf("Find(b) = %+v, %v", it, ok)
	}
	if _, ok := parsed.Find("c"); ok {
		t.Fatal("found a skipped skill")
	}
	fm, body, err := ReadItem(context.Background(), blobs, it)
	if err != nil || fm.Name != "b" || string(body) != "# b\nbody of b\n" {
		t.Fatalf("ReadItem = %+v %q %v", fm, body, err)
	}
	want := digests(ea.Ref, eb.Ref, c.Text)
	if got := edges.children(c.Doc.Digest); !slices.Equal(got, want) {
		t.Fatalf("edges = %v, want %v", got, want)
	}
	wantEdgesAreItsRefs(t, blobs, edges, c.Doc)
	if _, err := ParseAgentMenu([]byte(raw)); err == nil {
		t.Fatal("a skill catalog parsed as an agent menu")
	}
}

func TestSkillBadFrontmatterSkipped(t *testing.T) {
	blobs := blob.NewMemory()
	tr := tree(t, blobs, "/work", map[string]string{
		".cairn/skills/a-none/SKILL.md":      "# no frontmatter\n",
		".cairn/skills/b-open/SKILL.md":      "---\nname: open\ndescription: never closed\n",
		".cairn/skills/c-noname/SKILL.md":    "---\ndescription: d\n---\n",
		".cairn/skills/d-nodesc/SKILL.md":    "---\nname: nodesc\n---\n",
		".cairn/skills/e-intname/SKILL.md":   "---\nname: 12\ndescription: d\n---\n",
		".cairn/skills/f-badyaml/SKILL.md":   "---\nname: [unclosed\ndescription: d\n---\n",
		".cairn/skills/g-emptyname/SKILL.md": "---\nname: \"  \"\ndescription: d\n---\n",
		".cairn/skills/h-list/SKILL.md":      "---\n- name\n- description\n---\n",
		".cairn/skills/i-late/SKILL.md":      "\n---\nname: late\ndescription: d\n---\n",
		".cairn/skills/j-big/SKILL.md":       skill("big", strings.Repeat("x", DefaultMaxSourceBytes)),
		".cairn/skills/k-binary/SKILL.md":    skill("binary", "\xff"),
		".cairn/skills/z-good/SKILL.md":      skill("good", "fine"),
	})
	c, w := buildSkills(t, blobs, newEdges(t, blobs), tr)
	if got := names(c); !slices.Equal(got, []string{"good"}) {
		t.Fatalf("names = %q", got)
	}
	want := []string{
		"/work/.cairn/skills/a-none/SKILL.md",
		"/work/.cairn/skills/b-open/SKILL.md",
		"/work/.cairn/skills/c-noname/SKILL.md",
		"/work/.cairn/skills/d-nodesc/SKILL.md",
		"/work/.cairn/skills/e-intname/SKILL.md",
		"/work/.cairn/skills/f-badyaml/SKILL.md",
		"/work/.cairn/skills/g-emptyname/SKILL.md",
		"/work/.cairn/skills/h-list/SKILL.md",
		"/work/.cairn/skills/i-late/SKILL.md",
		"/work/.cairn/skills/j-big/SKILL.md",
		"/work/.cairn/skills/k-binary/SKILL.md",
	}
	if got := warnedPaths(w); !slices.Equal(got, want) {
		t.Fatalf("warned = %q", got)
	}
	if !slices.Equal(c.Warnings, w) {
		t.Fatal("catalog warnings differ from returned warnings")
	}
}

func TestSkillDuplicateNames(t *testing.T) {
	blobs := blob.NewMemory()
	first := tree(t, blobs, "/one", map[string]string{
		".agents/skills/a/SKILL.md": skill("dup", "from .agents"),
		".cairn/skills/z/SKILL.md":  skill("dup", "from .cairn, which is searched first"),
		".cairn/skills/y/SKILL.md":  skill("solo", "only one"),
	})
	second := tree(t, blobs, "/two", map[string]string{
		".cairn/skills/a/SKILL.md": skill("dup", "from a later tree"),
	})
	c, w := buildSkills(t, blobs, newEdges(t, blobs), first, second)
	it, _ := c.Find("dup")
	if got := names(c); !slices.Equal(got, []string{"dup", "solo"}) || it.Path != "/one/.cairn/skills/z/SKILL.md" {
		t.Fatalf("names = %q, dup = %+v", got, it)
	}
	want := []string{"/one/.agents/skills/a/SKILL.md", "/two/.cairn/skills/a/SKILL.md"}
	if got := warnedPaths(w); !slices.Equal(got, want) || !strings.Contains(w[0].Message, "/one/.cairn/skills/z/SKILL.md") {
		t.Fatalf("warnings = %+v", w)
	}
}

func TestNoSkillsNoCatalog(t *testing.T) {
	blobs := blob.NewMemory()
	tr := tree(t, blobs, "/work", map[string]string{
		"README.md":                "x",
		".cairn/skills/a/SKILL.md": "no frontmatter",
	})
	before, _ := blobs.Usage(context.Background())
	c, w := buildSkills(t, blobs, newEdges(t, blobs), tr)
	after, _ := blobs.Usage(context.Background())
	if c != nil || len(w) != 1 || before != after {
		t.Fatalf("catalog %+v, warnings %+v, stored %d blobs", c, w, after.Blobs-before.Blobs)
	}
}

func TestCatalogIdenticalInputsIdenticalDigests(t *testing.T) {
	blobs := blob.NewMemory()
	files := map[string]string{
		".cairn/skills/b/SKILL.md": skill("b", "B"),
		".cairn/skills/a/SKILL.md": skill("a", "A"),
	}
	c1, _ := buildSkills(t, blobs, newEdges(t, blobs), tree(t, blobs, "/work", files))
	files["other.txt"] = "unrelated"
	c2, _ := buildSkills(t, blobs, newEdges(t, blobs), tree(t, blobs, "/work", files))
	if c1.Doc != c2.Doc || c1.Text != c2.Text {
		t.Fatal("identical skills gave different digests")
	}
}

func TestAgentMenu(t *testing.T) {
	blobs := blob.NewMemory()
	edges := newEdges(t, blobs)
	tr := tree(t, blobs, "/work", map[string]string{
		".cairn/agents/writer.md":        "---\nname: writer\ndescription: Drafts release notes.\nmodel: big-model\n---\nYou write.\n",
		".agents/agents/checker.md":      "---\nname: checker\ndescription: Checks facts.\n---\nYou check.\n",
		".cairn/agents/nested/helper.md": "---\nname: helper\ndescription: nested, ignored\n---\n",
		".cairn/agents/notes.txt":        "---\nname: notes\ndescription: not markdown\n---\n",
		".agents/agents/bad.md":          "---\nname: bad\ndescription: d\nmodel: 7\n---\n",
		".cairn/skills/s/SKILL.md":       skill("s", "a skill, not an agent"),
	})
	c, w, err := BuildAgentMenu(context.Background(), blobs, edges, []Tree{tr}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(c); !slices.Equal(got, []string{"checker", "writer"}) {
		t.Fatalf("names = %q", got)
	}
	if got := warnedPaths(w); !slices.Equal(got, []string{"/work/.agents/agents/bad.md"}) {
		t.Fatalf("warnings = %+v", w)
	}
	want := AgentMenuHeader + "\n" +
		"- checker: Checks facts. (/work/.agents/agents/checker.md)\n" +
		"- writer: Drafts release notes. (/work/.cairn/agents/writer.md)\n"
	if got := get(t, blobs, c.Text); got != want {
		t.Fatalf("text = %q", got)
	}
	raw := get(t, blobs, c.Doc)
	if c.Doc.MediaType != AgentMenuMediaType || !strings.Contains(raw, `"format":"cairn.agent-menu"`) || !strings.Contains(raw, `"agents":[`) {
		t.Fatalf("menu %+v %s", c.Doc, raw)
	}
	parsed, err := ParseAgentMenu([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if it, ok := parsed.Find("writer"); !ok || it.Model != "big-model" {
		t.Fatalf("writer = %+v", it)
	}
	if it, _ := parsed.Find("checker"); it.Model != "" {
		t.Fatalf("checker = %+v", it)
	}
	if _, err := ParseSkillCatalog([]byte(raw)); err == nil {
		t.Fatal("an agent menu parsed as a skill catalog")
	}
	var refs []content.ContentRef
	for _, it := range c.Items {
		refs = append(refs, it.Ref)
	}
	if got := edges.children(c.Doc.Digest); !slices.Equal(got, digests(append(refs, c.Text)...)) {
		t.Fatalf("edges = %v", got)
	}
	wantEdgesAreItsRefs(t, blobs, edges, c.Doc)
}

func TestSkillsIgnoreModel(t *testing.T) {
	blobs := blob.NewMemory()
	tr := tree(t, blobs, "/work", map[string]string{
		".cairn/skills/a/SKILL.md": "---\nname: a\ndescription: d\nmodel: m\n---\n",
	})
	c, _ := buildSkills(t, blobs, newEdges(t, blobs), tr)
	if c.Items[0].Model != "" {
		t.Fatalf("skill kept a model: %+v", c.Items[0])
	}
}

func TestParseCatalogRejects(t *testing.T) {
	ref := `{"digest":"` + content.Sum(nil).String() + `","mediaType":"text/plain"}`
	item := func(name string) string {
		return `{"name":"` + name + `","description":"d","path":"/p","ref":` + ref + `}`
	}
	doc := func(items ...string) string {
		return `{"format":"cairn.skill-catalog","version":1,"skills":[` + strings.Join(items, ",") + `],"warnings":[],"text":` + ref + `}`
	}
	if _, err := ParseSkillCatalog([]byte(doc(item("a"), item("b")))); err != nil {
		t.Fatalf("valid catalog refused: %v", err)
	}
	for _, bad := range []string{
		doc(item("b"), item("a")),
		doc(item("a"), item("a")),
		doc(),
		`{"format":"cairn.skill-catalog","version":2,"skills":[` + item("a") + `],"warnings":[],"text":` + ref + `}`,
		`{"format":"cairn.skill-catalog","version":1,"skills":[` + item("a") + `],"warnings":[]}`,
		`{"format":"cairn.skill-catalog","version":1,"skills":[` + item("a") + `],"agents":[` + item("b") + `],"warnings":[],"text":` + ref + `}`,
	} {
		if _, err := ParseSkillCatalog([]byte(bad)); err == nil {
			t.Errorf("ParseSkillCatalog(%s) succeeded", bad)
		}
	}
}

func TestParseFrontmatter(t *testing.T) {
	fm, body, err := ParseFrontmatter([]byte("---\r\nname: ' x '\r\ndescription: >\r\n  folded\r\n  text\r\nlicense: MIT\r\n---\r\nbody\r\n"))
	if err != nil || fm.Name != "x" || fm.Description != "folded text" || string(body) != "body\r\n" {
		t.Fatalf("CRLF: %+v %q %v", fm, body, err)
	}
	fm, body, err = ParseFrontmatter([]byte("---\nname: a\ndescription: \"two\\n  lines\"\n---"))
	if err != nil || fm.Description != "two lines" || len(body) != 0 {
		t.Fatalf("no body: %+v %q %v", fm, body, err)
	}
	if _, _, err := ParseFrontmatter([]byte("plain")); !errors.Is(err, ErrNoFrontmatter) {
		t.Fatalf("plain: %v", err)
	}
	for _, bad := range []string{
		"---\nname: \"a\\nb\"\ndescription: d\n---\n",
		"---\nname: a\ndescription: d\nmodel: [x]\n---\n",
		"---\nname: a\nname: b\ndescription: d\n---\n",
		"---\nname: a\ndescription: 3\n---\n",
		"---\nname: a\ndescription:\n---\n",
		"---\n---\n",
		"---",
		" ---\nname: a\ndescription: d\n---\n",
	} {
		if _, _, err := ParseFrontmatter([]byte(bad)); err == nil {
			t.Errorf("ParseFrontmatter(%q) succeeded", bad)
		}
	}
}

// An agent profile may leave its name to its file, and lists the tools a
// sub-agent gets, as a list or as one string.
func TestAgentProfiles(t *testing.T) {
	blobs := blob.NewMemory()
	edges := newEdges(t, blobs)
	tr := tree(t, blobs, "/work", map[string]string{
		".cairn/agents/reviewer.md": "---\ndescription: Reviews a file.\nmodel: small\ntools: [vfs_read_file, docs.*]\n---\nYou review.\n",
		".cairn/agents/writer.md":   "---\nname: scribe\ndescription: Writes.\ntools: vfs_read_file, vfs_write_file\n---\nYou write.\n",
		".cairn/agents/bad.md":      "---\ndescription: d\ntools: [1]\n---\n",
	})
	c, w, err := BuildAgentMenu(context.Background(), blobs, edges, []Tree{tr}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(c); !slices.Equal(got, []string{"reviewer", "scribe"}) || len(w) != 1 {
		t.Fatalf("names = %q, warnings %+v", got, w)
	}
	r, _ := c.Find("reviewer")
	s, _ := c.Find("scribe")
	if !slices.Equal(r.Tools, []string{"vfs_read_file", "docs.*"}) || r.Model != "small" || !slices.Equal(s.Tools, []string{"vfs_read_file", "vfs_write_file"}) {
		t.Fatalf("reviewer %+v, scribe %+v", r, s)
	}
	fm, body, err := ReadProfile(context.Background(), blobs, r)
	if err != nil || fm.Name != "reviewer" || string(body) != "You review.\n" {
		t.Fatalf("ReadProfile = %+v %q %v", fm, body, err)
	}
}
