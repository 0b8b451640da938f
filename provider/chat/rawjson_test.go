package chat

import (
	"bytes"
	"testing"
)

func TestObjectMembersKeepsTokens(t *testing.T) {
	raw := []byte(" {\n \"a\\\"b\" : \"x}\\\\\" , \"n\":-1.0e+3,\"o\":{ \"k\" : [1, {\"z\":\"]\"}] },\"e\":{},\"l\":[ ],\"t\":true,\"u\":null,\"s\":\"\\u00e9\"} ")
	ms, err := objectMembers(raw)
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
			t.Fatalf("member %d = %q %s %s", i, ms[i].Name, ms[i].RawName, ms[i].Value)
		}
	}
	var buf bytes.Buffer
	writeObject(&buf, ms)
	if c := compact(t, raw); !bytes.Equal(buf.Bytes(), c) {
		t.Fatalf("rewrite %s != compact %s", buf.Bytes(), c)
	}
}

func TestRawScannersRejectNonObjects(t *testing.T) {
	for _, in := range []string{``, `[]`, `"s"`, `{"a":}`, `{"a":1} {}`, `null`} {
		if _, err := objectMembers([]byte(in)); err == nil {
			t.Errorf("objectMembers(%q) accepted", in)
		}
	}
	for _, in := range []string{``, `{}`, `[1,]`} {
		if _, err := arrayElements([]byte(in)); err == nil {
			t.Errorf("arrayElements(%q) accepted", in)
		}
	}
	els, err := arrayElements([]byte(` [ {"a" : 1} , "x,]" ,[ ] ] `))
	if err != nil || len(els) != 3 || string(els[0]) != `{"a":1}` || string(els[1]) != `"x,]"` || string(els[2]) != `[]` {
		t.Fatalf("%q %v", els, err)
	}
}

func TestLookupUsesLastDuplicate(t *testing.T) {
	ms, _ := objectMembers([]byte(`{"a":1,"a":2}`))
	if string(lookup(ms, "a")) != "2" || lookup(ms, "b") != nil {
		t.Fatal("lookup")
	}
}
