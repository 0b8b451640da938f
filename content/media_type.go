package content

import (
	"errors"
	"fmt"
	"mime"
	"strings"
)

// ErrInvalidMediaType is returned (wrapped) for a media type that is not
// type/subtype (RFC 6838 names) with optional RFC 2045 parameters.
var ErrInvalidMediaType = errors.New("invalid media type")

// maxMediaType bounds a media type with its parameters.
const maxMediaType = 255

// ValidateMediaType checks a media type before it is stored or sent: a
// registered-name type and subtype (RFC 6838 section 4.2), then parameters
// that Go's MIME parser accepts; no control characters anywhere, so the
// value is safe in a Content-Type header and in a log line.
func ValidateMediaType(mt string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w %q: %s", ErrInvalidMediaType, truncate(mt, 80), why)
	}
	if mt == "" {
		return bad("empty")
	}
	if len(mt) > maxMediaType {
		return bad(fmt.Sprintf("longer than %d bytes", maxMediaType))
	}
	for i := 0; i < len(mt); i++ {
		if c := mt[i]; c < 0x20 || c >= 0x7f {
			return bad("only printable ASCII is allowed")
		}
	}
	name, _, _ := strings.Cut(mt, ";")
	typ, sub, ok := strings.Cut(strings.TrimSpace(name), "/")
	if !ok || !restrictedName(typ) || !restrictedName(sub) {
		return bad("want type/subtype, each 1-127 of letters, digits and !#$&-^_.+ starting with a letter or digit")
	}
	if _, _, err := mime.ParseMediaType(mt); err != nil {
		return bad("parameters must be ; name=value")
	}
	return nil
}

// restrictedName is RFC 6838's restricted-name.
func restrictedName(s string) bool {
	if len(s) == 0 || len(s) > 127 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("!#$&-^_.+", rune(c))) {
			return false
		}
	}
	return true
}
