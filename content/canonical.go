package content

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Canonical re-encodes a JSON document in canonical form: object keys sorted by
// their UTF-8 bytes, no insignificant whitespace, numbers kept as written,
// strings re-escaped by encoding/json's rules (HTML escaping off). Two documents
// that are JSON-equal up to key order and whitespace have equal canonical bytes.
func Canonical(doc []byte) ([]byte, error) {
	// Most documents (checkpoint chunks, payloads) are objects of plain
	// strings and numbers: rewritten from their bytes, they need no
	// decoding into maps. Whatever that pass does not take on (an error,
	// deep nesting) goes through the decoder, which gives the same bytes.
	if out, ok := canonicalBytes(doc); ok {
		return out, nil
	}
	return canonicalDecoded(doc)
}

// canonicalDecoded is Canonical through encoding/json's decoder.
func canonicalDecoded(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	// Only JSON whitespace may follow the document. (dec.More would miss a
	// stray closing '}' or ']'.)
	for _, c := range doc[dec.InputOffset():] {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return nil, fmt.Errorf("canonical json: trailing data after document")
		}
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// MarshalCanonical encodes v with encoding/json and then canonicalises it.
func MarshalCanonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Canonical(raw)
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			if err := writeCanonical(buf, t[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case string:
		writeString(buf, t)
	case json.Number:
		buf.WriteString(t.String())
	case bool:
		if t {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case nil:
		buf.WriteString("null")
	default:
		return fmt.Errorf("canonical json: unexpected %T", v)
	}
	return nil
}

func writeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // a string always encodes
	buf.Truncate(buf.Len() - 1) // Encode appends a newline
}
