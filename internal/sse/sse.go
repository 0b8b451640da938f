// Package sse plays a recorded, unstreamed provider response as the
// provider streams the same answer, in each API's own event format, so
// adapter tests and fake providers can serve streams built from the
// recorded payloads. Text, reasoning and tool arguments come in two pieces
// each, split on a character boundary.
package sse

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/cairn-agents/cairn/provider/rawjson"
)

// For returns the stream of body for the API whose path a request used
// (/chat/completions, /responses, /v1/messages), or an error for another.
func For(path string, body []byte) ([]byte, error) {
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return Chat(body)
	case strings.HasSuffix(path, "/responses"):
		return Responses(body)
	case strings.HasSuffix(path, "/messages"):
		return Anthropic(body)
	}
	return nil, fmt.Errorf("sse: no stream format for %s", path)
}

// Requested reports whether a request body asks for a stream.
func Requested(body []byte) bool {
	ms, err := rawjson.ObjectMembers(body)
	return err == nil && string(rawjson.Lookup(ms, "stream")) == "true"
}

// halves splits s in two on a character boundary.
func halves(s string) [2]string {
	half := len(s) / 2
	for half < len(s) && !utf8.RuneStart(s[half]) {
		half++
	}
	return [2]string{s[:half], s[half:]}
}

func quote(s string) []byte {
	var b bytes.Buffer
	rawjson.WriteString(&b, s)
	return b.Bytes()
}

func member(name string, value []byte) rawjson.Member {
	return rawjson.Member{Name: name, RawName: quote(name), Value: value}
}

func object(ms ...rawjson.Member) []byte {
	var b bytes.Buffer
	rawjson.WriteObject(&b, ms)
	return b.Bytes()
}

// with returns ms with name's value replaced (kept in place), or dropped
// when value is nil.
func with(ms []rawjson.Member, name string, value []byte) []rawjson.Member {
	out := make([]rawjson.Member, 0, len(ms))
	for _, m := range ms {
		if m.Name == name {
			if value == nil {
				continue
			}
			m.Value = value
		}
		out = append(out, m)
	}
	return out
}

// writer writes events: "event: NAME" (when the API names them) and data.
type writer struct {
	bytes.Buffer
	named bool
}

func (w *writer) event(name string, data []byte) {
	if w.named {
		fmt.Fprintf(w, "event: %s\n", name)
	}
	fmt.Fprintf(w, "data: %s\n\n", data)
}
