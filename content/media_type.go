package content

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidMediaType is returned (wrapped) for a media type that is not
// type/subtype (RFC 6838 names) with optional RFC 2045 parameters.
var ErrInvalidMediaType = errors.New("invalid media type")

// maxMediaType bounds a media type with its parameters.
const maxMediaType = 255

// ValidateMediaType checks a media type before it is stored or sent: a
// registered-name type and subtype (RFC 6838 section 4.2), then RFC 2045
// parameters; no control characters anywhere, so the
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
	if _, params, ok := strings.Cut(mt, ";"); ok && !validParams(params) {
		return bad("parameters must be ; name=value, the value a token or a quoted string")
	}
	return nil
}

// validParams checks RFC 2045 parameters after the first ";": each
// name=value, the name a token, the value a token or a quoted string, the
// parameters separated by ";" with optional spaces. It is a scan, not Go's
// mime parser, so the pure core and workflow code can call it: that parser
// fills a map.
func validParams(s string) bool {
	for {
		s = strings.TrimLeft(s, " \t")
		name := tokenPrefix(s)
		if name == "" || len(s) == len(name) || s[len(name)] != '=' {
			return false
		}
		s = s[len(name)+1:]
		if strings.HasPrefix(s, `"`) {
			end := quotedEnd(s)
			if end < 0 {
				return false
			}
			s = s[end:]
		} else {
			v := tokenPrefix(s)
			if v == "" {
				return false
			}
			s = s[len(v):]
		}
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return true
		}
		if s[0] != ';' {
			return false
		}
		s = s[1:]
	}
}

// tokenPrefix is the longest prefix of RFC 2045 token characters.
func tokenPrefix(s string) string {
	i := 0
	for i < len(s) && s[i] > ' ' && s[i] < 0x7f && !strings.ContainsRune(`()<>@,;:\"/[]?=`, rune(s[i])) {
		i++
	}
	return s[:i]
}

// quotedEnd is the index just past the quoted string s starts with, or -1.
func quotedEnd(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
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
