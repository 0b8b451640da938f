// Package replay answers HTTP requests from a recorded cassette, so demos and
// tests drive the live adapter code path (lowering, transport, decoding)
// without a network: chat.New(resolver, &http.Client{Transport: t}).
package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
)

// Cassette file identity.
const (
	Format  = "cairn.cassette"
	Version = 1
)

// Cassette is a recorded sequence of HTTP answers:
//
//	{"format":"cairn.cassette","version":1,"interactions":[
//	  {"status":200,"headers":{"Retry-After":"1"},"body":{…raw response…}}, …]}
//
// Bodies are kept as raw JSON, so the bytes a client receives are the bytes in
// the file (minus nothing: whitespace inside a body is preserved).
type Cassette struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Note says where the interactions came from (recorded live, scripted, …).
	Note         string        `json:"note,omitempty"`
	Interactions []Interaction `json:"interactions"`
}

// Interaction is one recorded answer.
type Interaction struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body"`
}

// Load reads and validates a cassette file.
func Load(path string) (*Cassette, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return c, nil
}

// Parse decodes and validates cassette bytes.
func Parse(data []byte) (*Cassette, error) {
	var c Cassette
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("replay: invalid cassette: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks the format marker, version and every interaction.
func (c *Cassette) Validate() error {
	if c.Format != Format {
		return fmt.Errorf("replay: invalid cassette: format %q, want %q", c.Format, Format)
	}
	if c.Version != Version {
		return fmt.Errorf("replay: invalid cassette: version %d, want %d", c.Version, Version)
	}
	for i, in := range c.Interactions {
		if in.Status < 100 || in.Status > 599 {
			return fmt.Errorf("replay: invalid cassette: interaction %d: status %d", i, in.Status)
		}
		if len(in.Body) == 0 {
			return fmt.Errorf("replay: invalid cassette: interaction %d: no body", i)
		}
		for k := range in.Headers {
			if http.CanonicalHeaderKey(k) == "Content-Length" {
				return fmt.Errorf("replay: invalid cassette: interaction %d: Content-Length is computed, not recorded", i)
			}
		}
	}
	return nil
}

// Marshal encodes the cassette with bodies as they are held.
func (c *Cassette) Marshal() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
