package core

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairn-agents/cairn/content"
)

// A tool result may have several parts (an MCP tool's text with an image,
// say): its content is then a parts record, MediaParts, that keeps text
// inline and names every other part by its own blob and media type. Each
// adapter lowers the record in its API's own form; a part the API cannot
// take in a tool result is named by a line of text instead.

// MediaParts is the media type of a stored parts record.
const MediaParts = "application/vnd.cairn.parts+json"

// ContentPart is one part: Text, or Ref to a blob of another media type
// and its size.
type ContentPart struct {
	Text  string              `json:"text,omitempty"`
	Ref   *content.ContentRef `json:"ref,omitempty"`
	Bytes int64               `json:"bytes,omitempty"`
}

type partsRecord struct {
	Parts []ContentPart `json:"parts"`
}

// IsParts reports whether ref names a stored parts record.
func IsParts(ref content.ContentRef) bool { return ref.MediaType == MediaParts }

// EncodeParts is the stored form of parts, in canonical JSON.
func EncodeParts(parts []ContentPart) ([]byte, error) {
	for i, p := range parts {
		if (p.Ref == nil) == (p.Text == "") {
			return nil, fmt.Errorf("part %d: give text or a ref", i)
		}
	}
	return content.MarshalCanonical(partsRecord{Parts: parts})
}

// DecodeParts reads a stored parts record.
func DecodeParts(data []byte) ([]ContentPart, error) {
	var r partsRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("a parts record: %w", err)
	}
	for i, p := range r.Parts {
		if (p.Ref == nil) == (p.Text == "") {
			return nil, fmt.Errorf("a parts record: part %d has neither text nor a ref", i)
		}
		if p.Ref != nil && p.Ref.Digest.IsZero() {
			return nil, errors.New("a parts record: a part's ref has no digest")
		}
	}
	return r.Parts, nil
}

// Describe is the line of text that stands for a blob part where an API
// cannot take it.
func (p ContentPart) Describe() string {
	return fmt.Sprintf("[%s, %d bytes: not shown]", p.Ref.MediaType, p.Bytes)
}
