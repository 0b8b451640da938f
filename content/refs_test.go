package content_test

import (
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/content"
)

func digests(data ...string) []content.Digest {
	out := make([]content.Digest, len(data))
	for i, d := range data {
		out[i] = content.Sum([]byte(d))
	}
	return out
}

func TestExtractRefs_FindsExactStringValuesAndKeys(t *testing.T) {
	a, b, c, d := digests("a", "b", "c", "d")[0], digests("b")[0], digests("c")[0], digests("d")[0]
	doc := `{
		"ref": "` + a.String() + `",
		"list": ["x", "` + b.String() + `", 7, true, null],
		"` + c.String() + `": {"nested": {"deeper": ["` + d.String() + `"]}}
	}`
	got, err := content.ExtractRefs([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []content.Digest{a, b, c, d}
	content.SortDigests(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestExtractRefs_RefsInsideLongerStringsDoNotCount(t *testing.T) {
	a := content.Sum([]byte("a"))
	doc := `{
		"text": "see ` + a.String() + `",
		"suffix": "` + a.String() + ` is the ref",
		"quoted": "\"` + a.String() + `\"",
		"upper": "sha256:` + upper(a.Hex()) + `",
		"bare": "` + a.Hex() + `",
		"number": 1
	}`
	got, err := content.ExtractRefs([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("found %v in a document with no exact ref strings", got)
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func TestExtractRefs_DuplicatesCollapsedAndSorted(t *testing.T) {
	ds := digests("1", "2", "3", "4", "5", "6")
	var doc []byte
	doc = append(doc, '[')
	// Each ref three times, in reverse order.
	for rep := 0; rep < 3; rep++ {
		for i := len(ds) - 1; i >= 0; i-- {
			if len(doc) > 1 {
				doc = append(doc, ',')
			}
			doc = append(doc, '"')
			doc = append(doc, ds[i].String()...)
			doc = append(doc, '"')
		}
	}
	doc = append(doc, ']')
	got, err := content.ExtractRefs(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(ds)
	content.SortDigests(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestExtractRefs_EscapedRefStringCountsAsTheSameString(t *testing.T) {
	a := content.Sum([]byte("a"))
	// "\u0073ha256:…" is the JSON spelling of the same string value.
	doc := `["\u0073ha256:` + a.Hex() + `"]`
	got, err := content.ExtractRefs([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []content.Digest{a}) {
		t.Fatalf("got %v", got)
	}
}

func TestExtractRefs_DocumentWithoutRefsGivesEmptyList(t *testing.T) {
	for _, doc := range []string{`{}`, `[]`, `"x"`, `1`, `null`, `{"a":[{"b":"c"}]}`} {
		got, err := content.ExtractRefs([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if len(got) != 0 {
			t.Fatalf("%s: got %v", doc, got)
		}
	}
}

func TestExtractRefs_InvalidJSONIsAnError(t *testing.T) {
	a := content.Sum([]byte("a")).String()
	for _, doc := range []string{
		``,
		`{`,
		`["` + a + `"`,
		`{"k":`,
		`{"k" "` + a + `"}`,
		`[1,]`,
		`[1 2]`,
		`["` + a + `"]]`,
		`"` + a + `" "` + a + `"`,
		`{"a":1} x`,
		`nul`,
	} {
		if got, err := content.ExtractRefs([]byte(doc)); err == nil {
			t.Errorf("ExtractRefs(%q) = %v, want an error", doc, got)
		}
	}
}
