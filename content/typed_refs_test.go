package content_test

import (
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/content"
)

type holder struct{ s string }

func (h holder) HeldRefs() []content.Digest {
	d, err := content.ParseDigest(h.s)
	if err != nil {
		return nil
	}
	return []content.Digest{d}
}

func TestRefsOf_FindsTypedFieldsOnly(t *testing.T) {
	a, b, c, d, e := digests("a", "b", "c", "d", "e")[0], digests("b")[0], digests("c")[0], digests("d")[0], digests("e")[0]
	type inner struct {
		Ref     *content.ContentRef
		Digests []content.Digest
		Held    holder
	}
	v := struct {
		Content content.ContentRef
		Preview string
		Text    []string
		Raw     []byte
		Inner   []inner
		ByName  map[string]any
		Zero    content.ContentRef
		NilRef  *content.ContentRef
		private content.ContentRef
	}{
		Content: content.ContentRef{Digest: a, MediaType: content.MediaText},
		Preview: b.String(), // text that looks like a ref is text
		Text:    []string{c.String()},
		Raw:     []byte(`"` + c.String() + `"`),
		Inner:   []inner{{Ref: &content.ContentRef{Digest: b, MediaType: content.MediaJSON}, Digests: []content.Digest{c, a}, Held: holder{d.String()}}},
		ByName:  map[string]any{"x": content.ContentRef{Digest: e}, b.String(): "y"},
		private: content.ContentRef{Digest: content.Sum([]byte("private"))},
	}
	got := content.RefsOf(v)
	want := []content.Digest{a, b, c, d, e}
	content.SortDigests(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	if got := content.RefsOf(struct{ Preview string }{a.String()}); len(got) != 0 {
		t.Fatalf("a string became a ref: %v", got)
	}
}

func TestParseDigest_RefusesTheZeroDigest(t *testing.T) {
	zero := "sha256:" + "0000000000000000000000000000000000000000000000000000000000000000"
	if _, err := content.ParseDigest(zero); err == nil {
		t.Fatal("the all-zero digest parsed")
	}
	var d content.Digest
	if err := d.UnmarshalText([]byte(zero)); err == nil {
		t.Fatal("the all-zero digest unmarshalled")
	}
}
