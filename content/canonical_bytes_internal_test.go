package content

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// canonicalSeeds are documents that reach each way canonicalBytes takes:
// plain and escaped strings and keys, duplicates, numbers of every form,
// nesting, whitespace, and invalid input of many kinds.
var canonicalSeeds = []string{
	`{"b":1,"a":[1,2,{"d":null,"c":true}]}`,
	`"caf\u00e9 <&> \u2028"`,
	`[1.0,1e3,1E+03,-0,0.000001,123456789012345678901234567890,2.50,-1.5e-7]`,
	`{"a":1,"a":2}`,
	`{"a":{"x":1},"b":2,"a":{"y":2}}`,
	"\"\xff\xfe\"",
	"{\"k\xff\":1,\"k\":2}",
	`{"":""}`,
	`123`,
	` {"z" : [ {"b" : "\/\u0041" , "a" : "\u003c\u003e\u0026" } ] , "é":"x", "e":"\t"} `,
	`{"h":"<a href=\"x\">&amp;</a>","c":"a\u0001\n\t\"\\"}`,
	"\"\x7f\"",
	`{"a":"\ud800"}`,
	`[true,false,null,[],{},[[]],{"a":{}}]`,
	``, `{`, `{"a":}`, `[1,]`, `{'a':1}`, `01`, `-`, `1.`, `1e`, `.5`, `{} {}`, `[01]`, `"\x"`, "\"a\nb\"", `[tru]`, `{"a":1,}`, `"\u12"`,
	strings.Repeat("[", 300) + strings.Repeat("]", 300),
}

// FuzzCanonicalBytesEqualsDecoded: whatever canonicalBytes rewrites, it
// rewrites to the bytes the decoder gives, and it fails only where the
// decoder fails or nesting is deep.
func FuzzCanonicalBytesEqualsDecoded(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) { sameCanonical(t, doc) })
}

func sameCanonical(t *testing.T, doc []byte) {
	t.Helper()
	fast, ok := canonicalBytes(doc)
	slow, err := canonicalDecoded(doc)
	switch {
	case ok && err != nil:
		t.Fatalf("canonicalBytes took %q, which the decoder refuses: %v", doc, err)
	case ok && !bytes.Equal(fast, slow):
		t.Fatalf("canonical bytes of %q:\n from the bytes %q\n decoded       %q", doc, fast, slow)
	case !ok && err == nil && bytes.Count(doc, []byte("[")) < canonicalDepth && bytes.Count(doc, []byte("{")) < canonicalDepth:
		t.Fatalf("canonicalBytes refused %q, which the decoder takes", doc)
	}
}

// Random documents, written with random spacing, escapes and key order,
// canonicalise to the same bytes both ways.
func TestCanonicalBytesEqualsDecodedOnRandomDocuments(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		var b strings.Builder
		randomJSON(r, &b, 0)
		sameCanonical(t, []byte(b.String()))
	}
}

func randomJSON(r *rand.Rand, b *strings.Builder, depth int) {
	space := func() {
		for range r.IntN(3) {
			b.WriteByte(" \t\n\r"[r.IntN(4)])
		}
	}
	space()
	switch k := r.IntN(10); {
	case k < 2 && depth < 5:
		b.WriteByte('{')
		for i := range r.IntN(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			space()
			randomString(r, b)
			space()
			b.WriteByte(':')
			randomJSON(r, b, depth+1)
		}
		space()
		b.WriteByte('}')
	case k < 4 && depth < 5:
		b.WriteByte('[')
		for i := range r.IntN(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			randomJSON(r, b, depth+1)
		}
		space()
		b.WriteByte(']')
	case k < 7:
		randomString(r, b)
	case k < 9:
		b.WriteString([]string{"0", "-0", "12", "1.50", "-3e7", "2E-03", "123456789012345678901234567890", "0.000001"}[r.IntN(8)])
	default:
		b.WriteString([]string{"true", "false", "null"}[r.IntN(3)])
	}
	space()
}

func randomString(r *rand.Rand, b *strings.Builder) {
	parts := []string{"a", "b", "key", "é", "日本", "<&>", `\"`, `\\`, `\/`, `\n`, `\u0041`, `\u00e9`, `\u2028`, `\ud83d\ude00`, `\u0001`, "\x7f", "\xff", " "}
	b.WriteByte('"')
	for range r.IntN(4) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	b.WriteByte('"')
}

// A document of the size of a checkpoint chunk canonicalises several
// times faster from its bytes than decoded (BenchmarkCanonical).
func BenchmarkCanonical(b *testing.B) {
	type entry struct {
		ID      string `json:"entryId"`
		Kind    string `json:"kind"`
		Role    string `json:"role"`
		Preview string `json:"preview"`
		Tokens  int    `json:"tokens"`
		Content struct {
			Digest    string `json:"digest"`
			MediaType string `json:"mediaType"`
		} `json:"content"`
	}
	items := make([]entry, 32)
	for i := range items {
		items[i] = entry{ID: fmt.Sprintf("e%d", i), Kind: "message", Role: "user", Preview: "Turn 4: a short message, as people write them.", Tokens: 17}
		items[i].Content.Digest = "sha256:0b00ef27f09eeab085fc7a61bef343b40f4b86acbc39de3f5f6bb7ec99c8f7f9"
		items[i].Content.MediaType = "text/plain; charset=utf-8"
	}
	doc, _ := json.Marshal(map[string]any{"format": "cairn.reducer-state.entries", "items": items})
	for _, c := range []struct {
		name string
		fn   func([]byte) ([]byte, error)
	}{{"bytes", Canonical}, {"decoded", canonicalDecoded}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.fn(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
