package content_test

import (
	"errors"
	"testing"

	"github.com/cairn-agents/cairn/content"
)

func TestValidateMediaType(t *testing.T) {
	for _, ok := range []string{
		content.MediaText, content.MediaJSON, "image/png", "audio/x-wav", "application/vnd.cairn.vfs.snapshot+json",
		"text/markdown; charset=utf-8", `text/plain; charset="utf-8"`, "application/octet-stream", "Text/HTML",
		`text/plain; a="x;y"; b=c`, `text/plain;a=b;c="d\"e"`, "text/plain ; charset=utf-8",
	} {
		if err := content.ValidateMediaType(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{
		"", "text", "text/", "/plain", "text/plain/x", "text/pl ain", "te xt/plain", ".x/plain", "text/plain\r\nX-Evil: 1",
		"text/plain\x00", "text/plain\x7f", "text/plain; charset", "text/plain; =x", "téxt/plain", "text/plain;;",
		"text/plain;", `text/plain; a="open`, "text/plain; a=b c", "text/plain; a=b;", "text/plain; a=(b)",
		"a/" + string(make([]byte, 300)),
	} {
		err := content.ValidateMediaType(bad)
		if !errors.Is(err, content.ErrInvalidMediaType) {
			t.Errorf("%q: %v, want ErrInvalidMediaType", bad, err)
		}
	}
	ref := content.Ref([]byte("x"), "text/plain\nInjected: yes", "")
	if err := ref.Validate(); !errors.Is(err, content.ErrInvalidRef) || !errors.Is(err, content.ErrInvalidMediaType) {
		t.Fatalf("a ref with a control character in its media type: %v", err)
	}
}
