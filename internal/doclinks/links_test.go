package doclinks

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#+ (.+)$`)
)

// anchor is the fragment GitHub gives a heading.
func anchor(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Every relative link of README.md and docs/*.md names a file of the
// repository (never one outside it), and every #fragment a heading there.
func TestDocumentLinksResolve(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"))
	checked := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			file := doc
			if path != "" {
				file = filepath.Join(filepath.Dir(doc), filepath.FromSlash(path))
				if rel, err := filepath.Rel(root, file); err != nil || strings.HasPrefix(rel, "..") {
					t.Errorf("%s links %s, outside the repository: a clone lacks it", filepath.Base(doc), target)
					continue
				}
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s links %s, which does not exist", filepath.Base(doc), target)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(file, ".md") {
				body, _ := os.ReadFile(file)
				found := false
				for _, h := range heading.FindAllStringSubmatch(string(body), -1) {
					if anchor(h[1]) == frag {
						found = true
					}
				}
				if !found {
					t.Errorf("%s links %s: no such heading", filepath.Base(doc), target)
				}
			}
			checked++
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d links: the pattern is broken", checked)
	}
}
