package content_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/cairn-agents/cairn/content"
)

func TestContentRef_MarshalsFieldsInFixedOrder(t *testing.T) {
	ref := content.Ref([]byte("hello"), content.MediaJSON, "chat_completions.message")
	got, err := json.Marshal(ref)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"digest":"` + helloDigest + `","mediaType":"application/json","providerKind":"chat_completions.message"}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// Embedded by value and by pointer, the encoding is the same.
	type holder struct {
		V content.ContentRef  `json:"v"`
		P *content.ContentRef `json:"p,omitempty"`
	}
	got, err = json.Marshal(holder{V: ref, P: &ref})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"v":`+want+`,"p":`+want+`}` {
		t.Fatalf("embedded: %s", got)
	}
}

func TestContentRef_OmitsEmptyProviderKind(t *testing.T) {
	got, err := json.Marshal(content.Ref([]byte("hello"), content.MediaText, ""))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"digest":"` + helloDigest + `","mediaType":"text/plain; charset=utf-8"}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestContentRef_JSONRoundTrip(t *testing.T) {
	for _, ref := range []content.ContentRef{
		content.Ref([]byte("a"), content.MediaText, ""),
		content.Ref([]byte("b"), content.MediaJSON, "openai_responses.output"),
	} {
		raw, err := json.Marshal(ref)
		if err != nil {
			t.Fatal(err)
		}
		var back content.ContentRef
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if back != ref {
			t.Fatalf("round trip: %+v != %+v", back, ref)
		}
	}
}

func TestContentRef_UnmarshalRejectsMalformedDigest(t *testing.T) {
	for _, doc := range []string{
		`{"digest":"sha256:ABC","mediaType":"text/plain"}`,
		`{"digest":"` + "SHA256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" + `","mediaType":"text/plain"}`,
		`{"digest":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824","mediaType":"text/plain"}`,
		`{"digest":42,"mediaType":"text/plain"}`,
	} {
		var r content.ContentRef
		if err := json.Unmarshal([]byte(doc), &r); err == nil {
			t.Errorf("Unmarshal(%s) accepted a malformed digest: %+v", doc, r)
		}
	}
}

func TestContentRef_ZeroDigestDoesNotEncode(t *testing.T) {
	if _, err := json.Marshal(content.ContentRef{MediaType: content.MediaText}); err == nil {
		t.Fatal("a ref without a digest encoded")
	}
}

func TestContentRef_ValidateNeedsDigestAndMediaType(t *testing.T) {
	if err := content.Ref([]byte("x"), content.MediaText, "").Validate(); err != nil {
		t.Fatalf("valid ref: %v", err)
	}
	if err := (content.ContentRef{MediaType: content.MediaText}).Validate(); !errors.Is(err, content.ErrInvalidRef) {
		t.Fatalf("missing digest: %v", err)
	}
	if err := (content.ContentRef{Digest: content.Sum([]byte("x"))}).Validate(); !errors.Is(err, content.ErrInvalidRef) {
		t.Fatalf("missing media type: %v", err)
	}
}
