package vfs

import (
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/blob"
)

func TestLookupListGlob(t *testing.T) {
	m := mustBuild(t, blob.NewMemory(), sampleFiles())
	if e, ok := Lookup(m, "docs/guide.md"); !ok || e.Size != 6 {
		t.Fatalf("Lookup: %+v %v", e, ok)
	}
	for _, p := range []string{"docs", "nope", "docs/guide", ""} {
		if _, ok := Lookup(m, p); ok {
			t.Errorf("Lookup(%q) found", p)
		}
	}

	list := func(dir string) string {
		t.Helper()
		es, err := List(m, dir)
		if err != nil {
			t.Fatalf("List(%q): %v", dir, err)
		}
		var out []string
		for _, e := range es {
			s := e.Name
			if e.IsDir {
				s += "/"
			} else if e.Entry.Path != e.Path {
				t.Fatalf("entry path %q != %q", e.Entry.Path, e.Path)
			}
			out = append(out, s)
		}
		return strings.Join(out, " ")
	}
	for dir, want := range map[string]string{
		"":       ".cairn/ README.md a/ a.txt docs/ same-as-notes/ src/",
		"/":      ".cairn/ README.md a/ a.txt docs/ same-as-notes/ src/",
		"docs":   "api/ guide.md notes.txt",
		"/docs/": "api/ guide.md notes.txt",
		"a":      "b/",
		"a/b/c":  "deep.md",
	} {
		if got := list(dir); got != want {
			t.Errorf("List(%q) = %q, want %q", dir, got, want)
		}
	}
	var nf *NotFoundError
	for _, dir := range []string{"nope", "README.md", "doc"} {
		if _, err := List(m, dir); !errors.As(err, &nf) {
			t.Errorf("List(%q) = %v, want NotFoundError", dir, err)
		}
	}
	// A path that climbs out, or that is not clean, names nothing: refused
	// rather than cleaned (".." used to list the root).
	var pe *PathError
	for _, dir := range []string{"../x", "..", "/..", "docs/..", "./docs", "docs//api", "docs/./api", "//", "docs\\api"} {
		if _, err := List(m, dir); !errors.As(err, &pe) {
			t.Errorf("List(%q) = %v, want a PathError", dir, err)
		}
	}

	glob := func(pat string) string {
		t.Helper()
		es, err := Glob(m, pat)
		if err != nil {
			t.Fatalf("Glob(%q): %v", pat, err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Path)
		}
		return strings.Join(out, " ")
	}
	for pat, want := range map[string]string{
		"*.md":         "README.md",
		"**/*.md":      ".cairn/prompts/inst.md README.md a/b/c/deep.md docs/guide.md",
		"docs/*":       "docs/guide.md docs/notes.txt",
		"docs/**":      "docs/api/v1.json docs/guide.md docs/notes.txt",
		"**/notes.txt": "docs/notes.txt same-as-notes/notes.txt",
		"a/**/deep.md": "a/b/c/deep.md",
		"a/**/**/c/*":  "a/b/c/deep.md",
		"src/main.?o":  "src/main.go",
		"[ab]*":        "a.txt",
		"docs":         "",
		"**":           glob("**/*"),
		"/docs/api/*":  "docs/api/v1.json",
		"x/**":         "",
	} {
		if got := glob(pat); got != want {
			t.Errorf("Glob(%q) = %q, want %q", pat, got, want)
		}
	}
	if _, err := Glob(m, "docs/[z"); !errors.Is(err, path.ErrBadPattern) {
		t.Errorf("bad pattern: %v", err)
	}
	if strings.Count(glob("**"), " ")+1 != len(m.Files) {
		t.Error("** does not match every file")
	}
}
