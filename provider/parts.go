package provider

import (
	"fmt"

	"github.com/cairn-agents/cairn/core"
)

// Part is one part of a stored parts record (core.MediaParts), read: Text,
// or the Data of a blob part with its MediaType; Describe stands for a
// blob part where an API cannot take it.
type Part struct {
	Text      string
	MediaType string
	Data      []byte
	Describe  string
}

// Shown is the part as text: its text, or the line that names a blob part.
func (p Part) Shown() string {
	if p.Data != nil {
		return p.Describe
	}
	return p.Text
}

// IsImage reports whether p is an image of a type every provider API
// takes (JPEG, PNG, GIF, WebP).
func (p Part) IsImage() bool {
	switch p.MediaType {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
		return p.Data != nil
	}
	return false
}

// LoadParts reads the parts record that is e's content and every blob it
// names, with load (an adapter's reader of an entry's content).
func LoadParts(e core.Entry, load func(core.Entry) ([]byte, error)) ([]Part, error) {
	data, err := load(e)
	if err != nil {
		return nil, err
	}
	record, err := core.DecodeParts(data)
	if err != nil {
		return nil, fmt.Errorf("entry %s: %w", e.ID, err)
	}
	out := make([]Part, 0, len(record))
	for _, p := range record {
		if p.Ref == nil {
			out = append(out, Part{Text: p.Text})
			continue
		}
		part := e
		part.Content = *p.Ref
		body, err := load(part)
		if err != nil {
			return nil, err
		}
		out = append(out, Part{MediaType: p.Ref.MediaType, Data: body, Describe: p.Describe()})
	}
	return out, nil
}
