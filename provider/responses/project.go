package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairn-agents/cairn/provider/rawjson"
)

// Projections derive display material from a stored item blob. They are
// views: the stored item stays the one authoritative copy, and nothing here
// is ever sent to a model.

// ProjectText returns the visible text of a stored `message` item: its
// output_text (or input_text) parts joined without separator, as the SDKs'
// output_text does; when the message has no text but a refusal part, the
// refusal text.
func ProjectText(native []byte) (string, error) {
	text, _, err := ProjectMessage(native)
	return text, err
}

// ProjectMessage returns the visible text of a stored `message` item (see
// ProjectText) and whether that text is a refusal: the message has refusal
// parts and no text.
func ProjectMessage(native []byte) (text string, refusal bool, err error) {
	ms, err := itemOf(native, itemMessage)
	if err != nil {
		return "", false, fmt.Errorf("responses: project text: %w", err)
	}
	text, refusal = visibleText(messageText(ms))
	return text, refusal, nil
}

// ProjectReasoning returns the visible reasoning of a stored `reasoning`
// item: its summary_text parts joined by blank lines, or, for servers that
// expose raw reasoning instead of a summary (gpt-oss behind vLLM, say), its
// reasoning_text content parts. encrypted_content is never decoded or shown.
func ProjectReasoning(native []byte) (string, error) {
	ms, err := itemOf(native, itemReasoning)
	if err != nil {
		return "", fmt.Errorf("responses: project reasoning: %w", err)
	}
	return reasoningText(ms), nil
}

// ProjectCitations returns the annotations of a stored `message` item's
// output_text parts (url_citation, file_citation, …) as one JSON array of the
// raw annotation objects, in part order, or nil when there are none. Index
// fields in them are relative to the text of the part they came from.
func ProjectCitations(native []byte) (json.RawMessage, error) {
	ms, err := itemOf(native, itemMessage)
	if err != nil {
		return nil, fmt.Errorf("responses: project citations: %w", err)
	}
	var all [][]byte
	for _, p := range contentParts(rawjson.Lookup(ms, "content")) {
		if ann := rawjson.Lookup(p, "annotations"); len(ann) > 0 && ann[0] == '[' {
			els, err := rawjson.ArrayElements(ann)
			if err != nil {
				return nil, fmt.Errorf("responses: project citations: %w", err)
			}
			all = append(all, els...)
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	b.WriteByte('[')
	b.Write(bytes.Join(all, []byte(",")))
	b.WriteByte(']')
	return json.RawMessage(b.Bytes()), nil
}

// itemOf splits a stored item and checks its type.
func itemOf(native []byte, want string) ([]rawjson.Member, error) {
	ms, err := rawjson.ObjectMembers(native)
	if err != nil {
		return nil, err
	}
	if typ, _ := rawjson.String(rawjson.Lookup(ms, "type")); typ != want {
		return nil, fmt.Errorf("item of type %q is not a %s item", typ, want)
	}
	return ms, nil
}

// contentParts returns the members of each object in a content array. A
// string content (the easy form of a message) has no parts.
func contentParts(c []byte) [][]rawjson.Member {
	if len(c) == 0 || c[0] != '[' {
		return nil
	}
	els, err := rawjson.ArrayElements(c)
	if err != nil {
		return nil
	}
	var out [][]rawjson.Member
	for _, el := range els {
		if ms, err := rawjson.ObjectMembers(el); err == nil {
			out = append(out, ms)
		}
	}
	return out
}

// messageText returns the text of message members' text parts and of their
// refusal parts.
func messageText(ms []rawjson.Member) (text, refusal string) {
	c := rawjson.Lookup(ms, "content")
	if s, ok := rawjson.String(c); ok {
		return s, ""
	}
	var txt, ref strings.Builder
	for _, p := range contentParts(c) {
		typ, _ := rawjson.String(rawjson.Lookup(p, "type"))
		switch typ {
		case "output_text", "input_text":
			s, _ := rawjson.String(rawjson.Lookup(p, "text"))
			txt.WriteString(s)
		case "refusal":
			s, _ := rawjson.String(rawjson.Lookup(p, "refusal"))
			ref.WriteString(s)
		}
	}
	return txt.String(), ref.String()
}

// visibleText is what a reader sees of a message: its text, else its
// refusals, and whether it is the refusals.
func visibleText(text, refusal string) (string, bool) {
	if text == "" && refusal != "" {
		return refusal, true
	}
	return text, false
}

// reasoningText joins a reasoning item's summary_text parts, falling back to
// reasoning_text content parts.
func reasoningText(ms []rawjson.Member) string {
	collect := func(parts [][]rawjson.Member, want string) string {
		var texts []string
		for _, p := range parts {
			if typ, _ := rawjson.String(rawjson.Lookup(p, "type")); typ == want {
				if s, ok := rawjson.String(rawjson.Lookup(p, "text")); ok && s != "" {
					texts = append(texts, s)
				}
			}
		}
		return strings.Join(texts, "\n\n")
	}
	if s := collect(contentParts(rawjson.Lookup(ms, "summary")), "summary_text"); s != "" {
		return s
	}
	return collect(contentParts(rawjson.Lookup(ms, "content")), "reasoning_text")
}
