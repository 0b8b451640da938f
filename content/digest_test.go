package content_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/content"
)

// The SHA-256 of "hello", a well-known test vector.
const helloDigest = "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"

func TestSum_MatchesKnownSHA256Vector(t *testing.T) {
	if got := content.Sum([]byte("hello")).String(); got != helloDigest {
		t.Fatalf("Sum(hello) = %s, want %s", got, helloDigest)
	}
	if got := content.Sum([]byte("hello")).Hex(); got != strings.TrimPrefix(helloDigest, "sha256:") {
		t.Fatalf("Hex() = %s", got)
	}
}

func TestParseDigest_RoundTripsItsStringForm(t *testing.T) {
	d, err := content.ParseDigest(helloDigest)
	if err != nil {
		t.Fatal(err)
	}
	if d != content.Sum([]byte("hello")) {
		t.Fatalf("parsed digest differs from Sum")
	}
	if d.String() != helloDigest {
		t.Fatalf("String() = %s", d.String())
	}
	for _, data := range []string{"", "a", "the quick brown fox", strings.Repeat("x", 1<<12)} {
		want := content.Sum([]byte(data))
		got, err := content.ParseDigest(want.String())
		if err != nil || got != want {
			t.Fatalf("round trip of %s: %v, %v", want, got, err)
		}
		if !content.IsDigestString(want.String()) {
			t.Fatalf("IsDigestString(%s) = false", want)
		}
	}
}

func TestParseDigest_RejectsEverythingButSha256Colon64LowercaseHex(t *testing.T) {
	hexPart := strings.TrimPrefix(helloDigest, "sha256:")
	cases := map[string]string{
		"empty":                "",
		"prefix only":          "sha256:",
		"uppercase hex":        "sha256:" + strings.ToUpper(hexPart),
		"one uppercase digit":  "sha256:" + "A" + hexPart[1:],
		"uppercase prefix":     "SHA256:" + hexPart,
		"wrong algorithm":      "sha512:" + hexPart,
		"no prefix":            hexPart,
		"no colon":             "sha256" + hexPart,
		"too short":            helloDigest[:len(helloDigest)-1],
		"too long":             helloDigest + "0",
		"non-hex letter":       "sha256:" + "g" + hexPart[1:],
		"non-hex punctuation":  "sha256:" + "-" + hexPart[1:],
		"leading space":        " " + helloDigest,
		"trailing space":       helloDigest[:len(helloDigest)-1] + " ",
		"trailing newline":     helloDigest + "\n",
		"non-ASCII digit":      "sha256:" + "٣" + hexPart[2:],
		"ref inside a string":  "see " + helloDigest,
		"other prefix, 64 hex": "md5sum:" + hexPart,
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			if content.IsDigestString(s) {
				t.Fatalf("IsDigestString(%q) = true", s)
			}
			_, err := content.ParseDigest(s)
			if !errors.Is(err, content.ErrInvalidDigest) {
				t.Fatalf("ParseDigest(%q) error = %v, want ErrInvalidDigest", s, err)
			}
			var d content.Digest
			if err := d.UnmarshalText([]byte(s)); !errors.Is(err, content.ErrInvalidDigest) {
				t.Fatalf("UnmarshalText(%q) error = %v, want ErrInvalidDigest", s, err)
			}
			if !d.IsZero() {
				t.Fatalf("a failed UnmarshalText changed the digest")
			}
		})
	}
}

func TestMustParseDigest_PanicsOnBadInput(t *testing.T) {
	if d := content.MustParseDigest(helloDigest); d.String() != helloDigest {
		t.Fatalf("MustParseDigest = %s", d)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("MustParseDigest of a bad string did not panic")
		}
	}()
	content.MustParseDigest("sha256:nope")
}

func TestDigest_ZeroValueCannotBeEncoded(t *testing.T) {
	var d content.Digest
	if !d.IsZero() {
		t.Fatal("zero digest is not IsZero")
	}
	if content.Sum(nil).IsZero() {
		t.Fatal("the digest of empty bytes is not the zero digest")
	}
	if _, err := d.MarshalText(); !errors.Is(err, content.ErrInvalidDigest) {
		t.Fatalf("MarshalText of zero digest: %v", err)
	}
	txt, err := content.Sum([]byte("hello")).MarshalText()
	if err != nil || string(txt) != helloDigest {
		t.Fatalf("MarshalText = %q, %v", txt, err)
	}
}

func TestSortDigests_OrdersLikeTheirStrings(t *testing.T) {
	var ds []content.Digest
	for _, s := range []string{"q", "w", "e", "r", "t", "y", "u", "i", "o", "p"} {
		ds = append(ds, content.Sum([]byte(s)))
	}
	content.SortDigests(ds)
	for i := 1; i < len(ds); i++ {
		if ds[i-1].String() >= ds[i].String() {
			t.Fatalf("not sorted by string at %d: %s >= %s", i, ds[i-1], ds[i])
		}
	}
}
