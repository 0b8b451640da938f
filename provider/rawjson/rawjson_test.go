package rawjson

import (
	"bytes"
	"testing"
)

func TestObjectMembersKeepsTokens(t *testing.T) {
	raw := []byte(" {\n \"a\\\"b\" : \"x}\\\\\" , \"n\":-1.0e+3,\"o\":{ \"k\" : [1, {\"z\":\"]\"}] },\"e\":{},\"l\":[ ],\"t\":true,\"u\":null,\"s\":\"\\u00e9\"} ")
	ms, err := ObjectMembers(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ name, rawName, value string }{
		{`a"b`, `"a\"b"`, `"x}\\"`},
		{"n", `"n"`, `-1.0e+3`},
		{"o", `"o"`, `{"k":[1,{"z":"]"}]}`},
		{"e", `"e"`, `{}`},
		{"l", `"l"`, `[]`},
		{"t", `"t"`, `true`},
		{"u", `"u"`, `null`},
		{"s", `"s"`, `"\u00e9"`},
	}
	if len(ms) != len(want) {
		t.Fatalf("%d members: %+v", len(ms), ms)
	}
	for i, w := range want {
		if ms[i].Name != w.name || string(ms[i].RawName) != w.rawName || string(ms[i].Value) != w.value {
			t.Fatalf("Member %d = %q %s %s", i, ms[i].Name, ms[i].RawName, ms[i].Value)
		}
	}
	var buf bytes.Buffer
	WriteObject(&buf, ms)
	if c := compact(t, raw); !bytes.Equal(buf.Bytes(), c) {
		t.Fatalf("rewrite %s != compact %s", buf.Bytes(), c)
	}
}

func TestRawScannersRejectNonObjects(t *testing.T) {
	for _, in := range []string{``, `[]`, `"s"`, `{"a":}`, `{"a":1} {}`, `null`} {
		if _, err := ObjectMembers([]byte(in)); err == nil {
			t.Errorf("ObjectMembers(%q) accepted", in)
		}
	}
	for _, in := range []string{``, `{}`, `[1,]`} {
		if _, err := ArrayElements([]byte(in)); err == nil {
			t.Errorf("ArrayElements(%q) accepted", in)
		}
	}
	els, err := ArrayElements([]byte(` [ {"a" : 1} , "x,]" ,[ ] ] `))
	if err != nil || len(els) != 3 || string(els[0]) != `{"a":1}` || string(els[1]) != `"x,]"` || string(els[2]) != `[]` {
		t.Fatalf("%q %v", els, err)
	}
}

func TestLookupUsesLastDuplicate(t *testing.T) {
	ms, _ := ObjectMembers([]byte(`{"a":1,"a":2}`))
	if string(Lookup(ms, "a")) != "2" || Lookup(ms, "b") != nil {
		t.Fatal("Lookup")
	}
}

func compact(t *testing.T, raw []byte) []byte {
	t.Helper()
	c, err := Compact(raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
