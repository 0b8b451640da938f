// Package rawjson reads JSON objects and arrays member by member, keeping each
// value's exact bytes, so adapters can store and re-send native payloads
// without round-tripping them through maps or SDK structs.
package rawjson

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Native payloads are never round-tripped through maps or SDK structs: a map
// loses Member order and a struct drops fields it does not know. These helpers
// split a JSON object or array into the exact bytes of its members, so stored
// material can be re-emitted byte for byte.

// Member is one name/value pair of a JSON object, as written.
type Member struct {
	Name    string // unescaped name, for matching
	RawName []byte // the name token exactly as written, quotes included
	Value   []byte // the value exactly as written (compacted: see Compact)
}

// ObjectMembers returns the members of the JSON object raw, in order.
// Values are compacted (insignificant whitespace removed; every token's bytes,
// string escapes included, kept exactly).
func ObjectMembers(raw []byte) ([]Member, error) {
	raw = bytes.TrimSpace(raw)
	if !json.Valid(raw) {
		return nil, fmt.Errorf("not valid JSON")
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	var out []Member
	i := skipSpace(raw, 1)
	if raw[i] == '}' {
		return out, nil
	}
	for {
		end := skipValue(raw, i) // a string: the name
		rawName := raw[i:end]
		var name string
		if err := json.Unmarshal(rawName, &name); err != nil {
			return nil, err
		}
		i = skipSpace(raw, end)
		i = skipSpace(raw, i+1) // past ':'
		end = skipValue(raw, i)
		val, err := Compact(raw[i:end])
		if err != nil {
			return nil, err
		}
		out = append(out, Member{Name: name, RawName: rawName, Value: val})
		i = skipSpace(raw, end)
		if raw[i] == '}' {
			return out, nil
		}
		i = skipSpace(raw, i+1) // past ','
	}
}

// ArrayElements returns the compacted elements of the JSON array raw, in order.
func ArrayElements(raw []byte) ([][]byte, error) {
	raw = bytes.TrimSpace(raw)
	if !json.Valid(raw) {
		return nil, fmt.Errorf("not valid JSON")
	}
	if len(raw) == 0 || raw[0] != '[' {
		return nil, fmt.Errorf("not a JSON array")
	}
	var out [][]byte
	i := skipSpace(raw, 1)
	if raw[i] == ']' {
		return out, nil
	}
	for {
		end := skipValue(raw, i)
		val, err := Compact(raw[i:end])
		if err != nil {
			return nil, err
		}
		out = append(out, val)
		i = skipSpace(raw, end)
		if raw[i] == ']' {
			return out, nil
		}
		i = skipSpace(raw, i+1)
	}
}

// WriteObject writes members as a compact JSON object, names and values as held.
func WriteObject(buf *bytes.Buffer, ms []Member) {
	buf.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(m.RawName)
		buf.WriteByte(':')
		buf.Write(m.Value)
	}
	buf.WriteByte('}')
}

// Lookup returns the value of the last Member named name (encoding/json's rule
// for duplicates), or nil.
func Lookup(ms []Member, name string) []byte {
	var v []byte
	for _, m := range ms {
		if m.Name == name {
			v = m.Value
		}
	}
	return v
}

// IsNull reports whether a raw value is absent or JSON null.
func IsNull(v []byte) bool { return len(v) == 0 || string(v) == "null" }

// String decodes v when it is a JSON string.
func String(v []byte) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}

// Compact removes insignificant whitespace. Provider bodies are often
// pretty-printed; compacting keeps stored and re-sent bytes independent of
// that while leaving every token, string escapes included, untouched.
func Compact(v []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteString writes s as a JSON string without HTML escaping, so prose with
// '<' or '&' is sent as written. The output is a pure function of s.
func WriteString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // a string always encodes
	buf.Truncate(buf.Len() - 1) // Encode appends a newline
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the value starting at b[i]. b must be
// valid JSON (checked by the callers) so only nesting and strings matter.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default: // number, true, false, null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}
