package content_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/cairn-agents/cairn/content"
)

func TestCanonical_Encodings(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"keys sorted", `{"b":1,"a":2,"c":3}`, `{"a":2,"b":1,"c":3}`},
		{"keys sorted by bytes, not locale", `{"b":0,"B":0,"a":0,"_":0,"ä":0,"10":0,"9":0}`, `{"10":0,"9":0,"B":0,"_":0,"a":0,"b":0,"ä":0}`},
		{"whitespace removed", " {\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\" : { } }\n", `{"a":[1,2],"b":{}}`},
		{"numbers kept as written", `[1.0,1e3,1E+03,-0,0.000001,123456789012345678901234567890,2.50]`, `[1.0,1e3,1E+03,-0,0.000001,123456789012345678901234567890,2.50]`},
		{"nested objects sorted at every level", `{"z":{"y":[{"b":1,"a":{"d":0,"c":0}}]},"a":null}`, `{"a":null,"z":{"y":[{"a":{"c":0,"d":0},"b":1}]}}`},
		{"array order kept", `[3,1,2]`, `[3,1,2]`},
		{"literals", `[true,false,null]`, `[true,false,null]`},
		{"scalar document", ` "x" `, `"x"`},
		{"unicode kept as UTF-8", `{"k":"caf\u00e9 ☕ 日本"}`, `{"k":"café ☕ 日本"}`},
		{"HTML characters not escaped", `{"h":"<a href=\"x\">&amp;</a>"}`, `{"h":"<a href=\"x\">&amp;</a>"}`},
		{"escaped HTML characters unescaped", `{"h":"\u003c\u003e\u0026"}`, `{"h":"<>&"}`},
		{"control characters escaped", `{"c":"a\u0001\n\t\"\\"}`, `{"c":"a\u0001\n\t\"\\"}`},
		{"needless escapes dropped", `{"s":"\/\u0041"}`, `{"s":"/A"}`},
		{"empty containers", `{"a":[],"b":{}}`, `{"a":[],"b":{}}`},
		{"duplicate key keeps last", `{"a":1,"a":2}`, `{"a":2}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := content.Canonical([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("Canonical(%s)\n got  %s\n want %s", c.in, got, c.want)
			}
			again, err := content.Canonical(got)
			if err != nil || !bytes.Equal(again, got) {
				t.Fatalf("not idempotent: %s -> %s (%v)", got, again, err)
			}
		})
	}
}

func TestCanonical_EqualDocumentsHaveEqualBytes(t *testing.T) {
	a, err := content.Canonical([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := content.Canonical([]byte("{ \"n\" : 1 ,\n \"messages\" : [ { \"content\" : \"hi\", \"role\" : \"user\" } ], \"model\":\"m\" }"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("%s != %s", a, b)
	}
}

func TestCanonical_RejectsInvalidAndTrailingData(t *testing.T) {
	for _, in := range []string{
		``,
		`   `,
		`{`,
		`{"a":}`,
		`{"a" 1}`,
		`[1,]`,
		`{'a':1}`,
		`NaN`,
		`01`,
		`{} {}`,
		`{"a":1} x`,
		`1 2`,
		`{}}`,
		`[]]`,
		`{"a":1}]`,
		`"x" ,`,
		`null null`,
	} {
		if got, err := content.Canonical([]byte(in)); err == nil {
			t.Errorf("Canonical(%q) = %s, want an error", in, got)
		}
	}
}

func TestMarshalCanonical_SortsStructAndMapOutput(t *testing.T) {
	v := struct {
		Zed  string         `json:"zed"`
		Alfa map[string]int `json:"alfa"`
		HTML string         `json:"html"`
	}{"z", map[string]int{"y": 1, "x": 2}, "<&>"}
	got, err := content.MarshalCanonical(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"alfa":{"x":2,"y":1},"html":"<&>","zed":"z"}`; string(got) != want {
		t.Fatalf("got %s want %s", got, want)
	}
	if _, err := content.MarshalCanonical(make(chan int)); err == nil {
		t.Fatal("MarshalCanonical of an unencodable value did not fail")
	}
}

func FuzzCanonical_IsIdempotentAndPreservesMeaning(f *testing.F) {
	for _, seed := range []string{
		`{"b":1,"a":[1,2,{"d":null,"c":true}]}`,
		`"caf\u00e9 <&> \u2028"`,
		`[1.0,1e3,-0]`,
		`{"a":1,"a":2}`,
		"\"\xff\xfe\"",
		`{"":""}`,
		`123`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		once, err := content.Canonical(doc)
		if err != nil {
			return
		}
		if !json.Valid(once) {
			t.Fatalf("canonical output is not valid JSON: %q", once)
		}
		twice, err := content.Canonical(once)
		if err != nil {
			t.Fatalf("canonical output does not canonicalise: %q: %v", once, err)
		}
		if !bytes.Equal(once, twice) {
			t.Fatalf("not idempotent:\n once  %q\n twice %q", once, twice)
		}
		// The canonical form means the same as the input (for valid UTF-8
		// input; encoding/json replaces invalid bytes with U+FFFD).
		var a, b any
		if json.Unmarshal(doc, &a) == nil && json.Unmarshal(once, &b) == nil {
			ra, _ := json.Marshal(a)
			rb, _ := json.Marshal(b)
			if !bytes.Equal(ra, rb) {
				t.Fatalf("meaning changed: %s vs %s", ra, rb)
			}
		}
	})
}
