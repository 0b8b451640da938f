package content

import (
	"bytes"
	"encoding/json"
	"slices"
)

// canonicalBytes is Canonical rewriting doc from its bytes, without
// decoding it: keys are sorted as raw spans, numbers and plain strings
// (printable ASCII without escapes) are copied, and only other strings
// are decoded and written again as Canonical writes them. ok is false
// when doc is not valid JSON or nests deeper than canonicalDepth; the
// decoder then says why, or does the work.
func canonicalBytes(doc []byte) (out []byte, ok bool) {
	c := canon{doc: doc, out: make([]byte, 0, len(doc))}
	c.space()
	if !c.value(0) {
		return nil, false
	}
	if c.space(); c.i != len(doc) {
		return nil, false
	}
	return c.out, true
}

// canonicalDepth bounds the nesting canonicalBytes recurses into.
const canonicalDepth = 256

type canon struct {
	doc     []byte
	i       int
	out     []byte
	members []member // a stack: each object's are above its parent's
	scratch []byte   // an object's members as written, to reorder
}

// member is an object member: its key, and where its canonical value is
// in canon.out.
type member struct {
	key      []byte
	from, to int
}

func (c *canon) space() {
	for c.i < len(c.doc) {
		switch c.doc[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// value writes the value at c.i.
func (c *canon) value(depth int) bool {
	if c.i >= len(c.doc) || depth > canonicalDepth {
		return false
	}
	switch b := c.doc[c.i]; {
	case b == '{':
		return c.object(depth)
	case b == '[':
		return c.array(depth)
	case b == '"':
		s, plain, ok := c.str()
		if !ok {
			return false
		}
		c.writeStr(s, plain)
		return true
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	default:
		from := c.i
		if !c.number() {
			return false
		}
		c.out = append(c.out, c.doc[from:c.i]...)
		return true
	}
}

func (c *canon) literal(word string) bool {
	if !bytes.HasPrefix(c.doc[c.i:], []byte(word)) {
		return false
	}
	c.i += len(word)
	c.out = append(c.out, word...)
	return true
}

func (c *canon) object(depth int) bool {
	c.i++ // '{'
	c.space()
	if c.i < len(c.doc) && c.doc[c.i] == '}' {
		c.i++
		c.out = append(c.out, "{}"...)
		return true
	}
	// Each value is written where it comes, and the members are then put
	// in key order from a copy.
	start, base := len(c.out), len(c.members)
	for {
		c.space()
		if c.i >= len(c.doc) || c.doc[c.i] != '"' {
			return false
		}
		key, plain, ok := c.str()
		if !ok {
			return false
		}
		c.space()
		if c.i >= len(c.doc) || c.doc[c.i] != ':' {
			return false
		}
		c.i++
		c.space()
		from := len(c.out)
		c.writeStr(key, plain)
		c.out = append(c.out, ':')
		if !c.value(depth + 1) {
			return false
		}
		c.members = append(c.members, member{key: key, from: from, to: len(c.out)})
		c.space()
		if c.i >= len(c.doc) {
			return false
		}
		if c.doc[c.i] == '}' {
			c.i++
			break
		}
		if c.doc[c.i] != ',' {
			return false
		}
		c.i++
	}
	// Sorted by key; of members with the same key the last one stays, as
	// when the decoder fills a map.
	members := c.members[base:]
	slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	c.scratch = append(c.scratch[:0], c.out[start:]...)
	c.out = append(c.out[:start], '{')
	for k, m := range members {
		if k+1 < len(members) && bytes.Equal(members[k+1].key, m.key) {
			continue
		}
		if c.out[len(c.out)-1] != '{' {
			c.out = append(c.out, ',')
		}
		c.out = append(c.out, c.scratch[m.from-start:m.to-start]...)
	}
	c.out = append(c.out, '}')
	c.members = c.members[:base]
	return true
}

func (c *canon) array(depth int) bool {
	c.i++ // '['
	c.out = append(c.out, '[')
	c.space()
	if c.i < len(c.doc) && c.doc[c.i] == ']' {
		c.i++
		c.out = append(c.out, ']')
		return true
	}
	for n := 0; ; n++ {
		if n > 0 {
			c.out = append(c.out, ',')
		}
		c.space()
		if !c.value(depth + 1) {
			return false
		}
		c.space()
		if c.i >= len(c.doc) {
			return false
		}
		if c.doc[c.i] == ']' {
			c.i++
			c.out = append(c.out, ']')
			return true
		}
		if c.doc[c.i] != ',' {
			return false
		}
		c.i++
	}
}

// str reads the string at c.i: its value, as the bytes between the
// quotes when they are plain (printable ASCII, no escapes), which
// Canonical writes back as they are, else decoded.
func (c *canon) str() (value []byte, plain bool, ok bool) {
	from := c.i
	c.i++ // '"'
	plain = true
	for c.i < len(c.doc) {
		switch b := c.doc[c.i]; {
		case b == '"':
			c.i++
			if plain {
				return c.doc[from+1 : c.i-1], true, true
			}
			var s string
			if err := json.Unmarshal(c.doc[from:c.i], &s); err != nil {
				return nil, false, false
			}
			return []byte(s), false, true
		case b == '\\':
			plain = false
			c.i += 2 // the escaped byte is never the closing quote
		case b < 0x20:
			return nil, false, false
		default:
			if b >= 0x80 {
				plain = false
			}
			c.i++
		}
	}
	return nil, false, false
}

// writeStr writes a string's value as Canonical writes strings.
func (c *canon) writeStr(value []byte, plain bool) {
	if plain {
		c.out = append(append(append(c.out, '"'), value...), '"')
		return
	}
	var buf bytes.Buffer
	writeString(&buf, string(value))
	c.out = append(c.out, buf.Bytes()...)
}

// number moves past the number at c.i, as JSON spells numbers.
func (c *canon) number() bool {
	d := c.doc
	digits := func() int {
		n := 0
		for c.i < len(d) && d[c.i] >= '0' && d[c.i] <= '9' {
			c.i++
			n++
		}
		return n
	}
	if c.i < len(d) && d[c.i] == '-' {
		c.i++
	}
	switch {
	case c.i < len(d) && d[c.i] == '0':
		c.i++
	case digits() == 0:
		return false
	}
	if c.i < len(d) && d[c.i] == '.' {
		c.i++
		if digits() == 0 {
			return false
		}
	}
	if c.i < len(d) && (d[c.i] == 'e' || d[c.i] == 'E') {
		c.i++
		if c.i < len(d) && (d[c.i] == '+' || d[c.i] == '-') {
			c.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
