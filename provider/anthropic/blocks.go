package anthropic

import (
	"bytes"
	"fmt"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// block is one native content block on its way into or out of a request:
// the compact JSON object as stored (or as built for non-native entries) and
// its type. Its bytes are never edited in place; a request that needs a
// different form (a cache marker, a citation without file_id) gets a copy.
type block struct {
	raw []byte
	typ string
	// seg is the block's cache segment, made with the block from its
	// context entry (nil for blocks built during a request, such as a
	// pause continuation, which no segment list reports).
	seg *core.CacheSegment
}

// parseBlock reads a content block's type; the block must be a JSON object
// with a string "type".
func parseBlock(raw []byte) (block, []rawjson.Member, error) {
	ms, err := rawjson.ObjectMembers(raw)
	if err != nil {
		return block{}, nil, err
	}
	typ, ok := rawjson.String(rawjson.Lookup(ms, "type"))
	if !ok || typ == "" {
		return block{}, nil, fmt.Errorf("content block without a string type")
	}
	c, err := rawjson.Compact(raw)
	if err != nil {
		return block{}, nil, err
	}
	return block{raw: c, typ: typ}, ms, nil
}

// isThinking: thinking and redacted_thinking blocks go back exactly as
// received and can carry no cache marker.
func (b block) isThinking() bool { return b.typ == typeThinking || b.typ == typeRedactedThinking }

// markable reports whether a cache marker may be added to the block. Never to
// thinking blocks (their request types have no cache_control, and Anthropic
// rejects a modified thinking block), never to a text block with citations
// (the spec keeps cited blocks unmodified), never to an empty text block
// (the API refuses cache_control there).
func (b block) markable() bool {
	switch {
	case b.isThinking():
		return false
	case b.typ == typeText:
		ms, err := rawjson.ObjectMembers(b.raw)
		if err != nil {
			return false
		}
		if text, _ := rawjson.String(rawjson.Lookup(ms, "text")); text == "" {
			return false
		}
		return !hasCitations(ms)
	}
	return true
}

// hasCitations: a non-empty citations array (null and [] carry nothing).
func hasCitations(ms []rawjson.Member) bool {
	c := rawjson.Lookup(ms, "citations")
	return !rawjson.IsNull(c) && string(c) != "[]"
}

// withMarker returns a copy of the block's bytes with cache_control as its
// last member (replacing one it may already carry).
func (b block) withMarker(marker []byte) []byte {
	raw := b.raw
	if bytes.Contains(raw, []byte(`"cache_control"`)) {
		if ms, err := rawjson.ObjectMembers(raw); err == nil {
			kept := ms[:0:0]
			for _, m := range ms {
				if m.Name != "cache_control" {
					kept = append(kept, m)
				}
			}
			var buf bytes.Buffer
			rawjson.WriteObject(&buf, kept)
			raw = buf.Bytes()
		}
	}
	out := make([]byte, 0, len(raw)+len(marker)+20)
	out = append(out, raw[:len(raw)-1]...)
	if len(raw) > 2 { // not "{}"
		out = append(out, ',')
	}
	out = append(out, `"cache_control":`...)
	out = append(out, marker...)
	return append(out, '}')
}

// sendable returns the form of a stored block a request may carry: the
// stored bytes themselves, except that a text block's citations lose
// `file_id`. Responses carry file_id in document citations; the request
// citation types do not accept it ("Extra inputs are not permitted").
func sendable(b block) (block, error) {
	if b.typ != typeText || !bytes.Contains(b.raw, []byte(`"file_id"`)) {
		return b, nil
	}
	ms, err := rawjson.ObjectMembers(b.raw)
	if err != nil {
		return block{}, err
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			out.WriteByte(',')
		}
		out.Write(m.RawName)
		out.WriteByte(':')
		if m.Name != "citations" || rawjson.IsNull(m.Value) || m.Value[0] != '[' {
			out.Write(m.Value)
			continue
		}
		cites, err := rawjson.ArrayElements(m.Value)
		if err != nil {
			return block{}, err
		}
		out.WriteByte('[')
		for j, c := range cites {
			if j > 0 {
				out.WriteByte(',')
			}
			cm, err := rawjson.ObjectMembers(c)
			if err != nil {
				out.Write(c) // not an object: nothing to drop
				continue
			}
			kept := cm[:0:0]
			for _, x := range cm {
				if x.Name != "file_id" {
					kept = append(kept, x)
				}
			}
			rawjson.WriteObject(&out, kept)
		}
		out.WriteByte(']')
	}
	out.WriteByte('}')
	return block{raw: out.Bytes(), typ: b.typ}, nil
}

// textBlock builds a text block for non-native text (instructions, user
// input, tool output is separate).
func textBlock(text string) block {
	var buf bytes.Buffer
	buf.WriteString(`{"type":"text","text":`)
	rawjson.WriteString(&buf, text)
	buf.WriteByte('}')
	return block{raw: buf.Bytes(), typ: typeText}
}
