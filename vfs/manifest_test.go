package vfs

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestManifestGoldenRoundTrip(t *testing.T) {
	m := mustBuild(t, blob.NewMemory(), sampleFiles())
	data, err := MarshalManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "manifest.golden.json")
	if *update {
		if err := os.WriteFile(golden, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, want) {
		t.Fatalf("manifest bytes differ from golden:\n got %s\nwant %s", data, want)
	}
	if canon, err := content.Canonical(data); err != nil || !bytes.Equal(canon, data) {
		t.Fatalf("manifest bytes are not canonical (err %v)", err)
	}
	back, err := ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Fatalf("round trip changed manifest:\n got %+v\nwant %+v", back, m)
	}
	if m.Totals != (Totals{Files: 10, Bytes: 67}) {
		t.Fatalf("totals = %+v", m.Totals)
	}
	// Sorted by bytes: ".cairn" < "README.md" < "a.txt" < "a/b/c/deep.md".
	var paths []string
	for _, e := range m.Files {
		paths = append(paths, e.Path)
	}
	if got := strings.Join(paths[:4], " "); got != ".cairn/prompts/inst.md README.md a.txt a/b/c/deep.md" {
		t.Fatalf("order: %s", got)
	}
	types := map[string]string{}
	for _, e := range m.Files {
		types[e.Path] = e.Ref.MediaType
	}
	for p, want := range map[string]string{"README.md": MediaMarkdown, "docs/notes.txt": MediaText, "src/logo.bin": MediaBinary, "docs/api/v1.json": MediaText} {
		if types[p] != want {
			t.Errorf("media type of %s = %q, want %q", p, types[p], want)
		}
	}
}

func TestEmptyManifest(t *testing.T) {
	m, err := NewManifest(nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := MarshalManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"files":[],"format":"cairn.vfs.snapshot","totals":{"bytes":0,"files":0},"version":1}`
	if string(data) != want {
		t.Fatalf("got %s", data)
	}
	if _, err := ParseManifest(data); err != nil {
		t.Fatal(err)
	}
}

const (
	d1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	d2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

func doc(files string, nfiles, nbytes int) string {
	return `{"format":"cairn.vfs.snapshot","version":1,"files":[` + files + `],"totals":{"files":` +
		itoa(nfiles) + `,"bytes":` + itoa(nbytes) + `}}`
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func file(p string, size int) string {
	return `{"path":"` + p + `","ref":{"digest":"` + d1 + `","mediaType":"text/plain"},"size":` + itoa(size) + `}`
}

func TestParseManifestRejects(t *testing.T) {
	var (
		formatErr  *FormatError
		pathErr    *PathError
		orderErr   *OrderError
		totalsErr  *TotalsError
		entryErr   *EntryError
		limitErr   *LimitError
		twoFiles   = file("a", 1) + "," + file("b", 2)
		okDocument = doc(twoFiles, 2, 3)
	)
	if _, err := ParseManifest([]byte(okDocument)); err != nil {
		t.Fatalf("baseline document rejected: %v", err)
	}
	cases := []struct {
		name   string
		doc    string
		target any
	}{
		{"not json", `{`, &formatErr},
		{"trailing data", okDocument + `}`, &formatErr},
		{"two documents", okDocument + okDocument, &formatErr},
		{"unknown field", strings.Replace(okDocument, `"version":1`, `"version":1,"extra":true`, 1), &formatErr},
		{"unknown format", strings.Replace(okDocument, "cairn.vfs.snapshot", "cairn.vfs.other", 1), &formatErr},
		{"unknown version", strings.Replace(okDocument, `"version":1`, `"version":2`, 1), &formatErr},
		{"missing files", `{"format":"cairn.vfs.snapshot","version":1,"totals":{"files":0,"bytes":0}}`, &formatErr},
		{"unsorted", doc(file("b", 2)+","+file("a", 1), 2, 3), &orderErr},
		{"duplicate", doc(file("a", 1)+","+file("a", 2), 2, 3), &orderErr},
		{"empty path", doc(file("", 1), 1, 1), &pathErr},
		{"absolute path", doc(file("/a", 1), 1, 1), &pathErr},
		{"dotdot", doc(file("../a", 1), 1, 1), &pathErr},
		{"inner dotdot", doc(file("a/../b", 1), 1, 1), &pathErr},
		{"dot segment", doc(file("./a", 1), 1, 1), &pathErr},
		{"empty segment", doc(file("a//b", 1), 1, 1), &pathErr},
		{"trailing slash", doc(file("a/", 1), 1, 1), &pathErr},
		{"backslash", doc(file(`a\\b`, 1), 1, 1), &pathErr},
		{"file is a directory", doc(file("a", 1)+","+file("a.txt", 1)+","+file("a/b", 1), 3, 3), &pathErr},
		{"wrong file total", doc(twoFiles, 3, 3), &totalsErr},
		{"wrong byte total", doc(twoFiles, 2, 4), &totalsErr},
		{"missing totals", `{"format":"cairn.vfs.snapshot","version":1,"files":[` + twoFiles + `]}`, &totalsErr},
		{"negative size", doc(file("a", -1), 1, -1), &entryErr},
		{"missing digest", doc(`{"path":"a","ref":{"mediaType":"text/plain"},"size":1}`, 1, 1), &entryErr},
		{"zero digest", doc(`{"path":"a","ref":{"digest":"sha256:`+strings.Repeat("0", 64)+`","mediaType":"text/plain"},"size":1}`, 1, 1), &formatErr}, // no digest string decodes to zero
		{"missing media type", doc(`{"path":"a","ref":{"digest":"`+d2+`"},"size":1}`, 1, 1), &entryErr},
		{"file too big", doc(file("big", DefaultMaxFileBytes+1), 1, DefaultMaxFileBytes+1), &limitErr},
		{"too deep", doc(file(strings.Repeat("d/", DefaultMaxDepth)+"f", 1), 1, 1), &limitErr},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseManifest([]byte(tc.doc))
			if err == nil {
				t.Fatalf("accepted %s", tc.doc)
			}
			if !errors.As(err, tc.target) {
				t.Fatalf("error %v (%T) is not %T", err, err, tc.target)
			}
			if tc.target != &limitErr && !errors.Is(err, ErrInvalidManifest) {
				t.Fatalf("error %v does not match ErrInvalidManifest", err)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		limits Limits
		files  map[string][]byte
		limit  string
		path   string
	}{
		{"files", Limits{MaxFiles: 2}, map[string][]byte{"a": {1}, "b": {2}, "c": {3}}, "files", ""},
		{"depth", Limits{MaxDepth: 2}, map[string][]byte{"a/b": {1}, "a/b2/c": {2}}, "depth", "a/b2/c"},
		{"path bytes", Limits{MaxPathBytes: 5}, map[string][]byte{"abcde": {1}, "abcdef": {2}}, "path bytes", "abcdef"},
		{"file bytes", Limits{MaxFileBytes: 3}, map[string][]byte{"a": {1, 2, 3}, "b": {1, 2, 3, 4}}, "file bytes", "b"},
		{"total bytes", Limits{MaxTotalBytes: 5}, map[string][]byte{"a": {1, 2, 3}, "b": {1, 2, 3}}, "total bytes", "b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			blobs := blob.NewMemory()
			_, err := Build(ctx, blobs, tc.files, tc.limits)
			var le *LimitError
			if !errors.As(err, &le) || !errors.Is(err, ErrLimit) {
				t.Fatalf("got %v, want a LimitError", err)
			}
			if le.Limit != tc.limit || le.Path != tc.path {
				t.Fatalf("got limit %q path %q, want %q %q", le.Limit, le.Path, tc.limit, tc.path)
			}
			if !strings.Contains(err.Error(), tc.limit) {
				t.Fatalf("message %q does not name the limit", err)
			}
			// The same manifest is refused on parse with those limits, and
			// the offending bytes were never stored by Build.
			var entries []Entry
			for p, data := range tc.files {
				entries = append(entries, Entry{Path: p, Ref: content.Ref(data, "text/plain", ""), Size: int64(len(data))})
			}
			m, err := NewManifest(entries, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			data, _ := MarshalManifest(m)
			if _, err := ParseManifestLimits(data, tc.limits); !errors.As(err, &le) || le.Limit != tc.limit {
				t.Fatalf("parse with limits: %v", err)
			}
			if _, err := ParseManifest(data); err != nil {
				t.Fatalf("parse with defaults: %v", err)
			}
		})
	}
	// Oversize bytes are not stored.
	blobs := blob.NewMemory()
	if _, err := Build(ctx, blobs, map[string][]byte{"big": make([]byte, 10)}, Limits{MaxFileBytes: 9}); err == nil {
		t.Fatal("oversize file accepted")
	}
	if u, _ := blobs.Usage(ctx); u.Blobs != 0 {
		t.Fatalf("oversize file stored: %+v", u)
	}
	// Limits looser than the defaults are clamped to them.
	if l := (Limits{MaxFiles: 1 << 30}).effective(); l != DefaultLimits() {
		t.Fatalf("effective limits %+v", l)
	}
}

func TestPaths(t *testing.T) {
	for _, p := range []string{"a", "a/b.md", ".cairn/x", "a b/ü.txt", "..a/b.."} {
		if err := ValidPath(p); err != nil {
			t.Errorf("ValidPath(%q) = %v", p, err)
		}
	}
	for _, p := range []string{"", "/a", "a/", "a//b", ".", "..", "a/./b", "a/../b", "a\x00b", "a\\b", "\xff"} {
		var pe *PathError
		if err := ValidPath(p); !errors.As(err, &pe) {
			t.Errorf("ValidPath(%q) = %v, want PathError", p, err)
		}
	}
	for in, want := range map[string]string{"/a//b/./c.md": "a/b/c.md", "./x": "x", "x/": "x"} {
		if got, err := CleanPath(in); err != nil || got != want {
			t.Errorf("CleanPath(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"../x", "a/../../x", "/", ".", ""} {
		if got, err := CleanPath(in); err == nil {
			t.Errorf("CleanPath(%q) = %q, want error", in, got)
		}
	}
}
