package chat

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairn-agents/cairn/provider/rawjson"
)

// Projections derive display material from stored native bytes. They are views:
// the bytes stay the one authoritative copy.

// ProjectText returns the visible text of a stored ProviderKindMessage blob:
// its content, or its refusal when there is no content.
func ProjectText(native []byte) (string, error) {
	text, _, err := ProjectMessage(native)
	return text, err
}

// ProjectMessage returns the visible text of a stored ProviderKindMessage
// blob and whether that text is a refusal: the message has no content, only
// a `refusal`.
func ProjectMessage(native []byte) (text string, refusal bool, err error) {
	ms, err := rawjson.ObjectMembers(native)
	if err != nil {
		return "", false, fmt.Errorf("chat: project message: %w", err)
	}
	text, refusal = visibleText(messageText(ms))
	return text, refusal, nil
}

// ProjectReasoning returns the visible reasoning text of a stored
// ProviderKindReasoning blob.
func ProjectReasoning(native []byte) (string, error) {
	ms, err := rawjson.ObjectMembers(native)
	if err != nil {
		return "", fmt.Errorf("chat: project reasoning: %w", err)
	}
	text, ok := rawjson.String(rawjson.Lookup(ms, "text"))
	if !ok {
		return "", fmt.Errorf("chat: project reasoning: no text")
	}
	return text, nil
}

// ProjectAnnotations returns the raw `annotations` array of a stored message
// blob (url_citation objects and the like), or nil when it has none.
func ProjectAnnotations(native []byte) (json.RawMessage, error) {
	ms, err := rawjson.ObjectMembers(native)
	if err != nil {
		return nil, fmt.Errorf("chat: project annotations: %w", err)
	}
	v := rawjson.Lookup(ms, "annotations")
	if rawjson.IsNull(v) {
		return nil, nil
	}
	return json.RawMessage(v), nil
}

// messageText returns the text of message members' content and their
// refusal.
func messageText(ms []rawjson.Member) (text, refusal string) {
	refusal, _ = rawjson.String(rawjson.Lookup(ms, "refusal"))
	c := rawjson.Lookup(ms, "content")
	if s, ok := rawjson.String(c); ok {
		text = s
	} else if len(c) > 0 && c[0] == '[' {
		// Content parts ([{"type":"text","text":…}]) as some servers return.
		var parts []struct {
			Text *string `json:"text"`
		}
		if json.Unmarshal(c, &parts) == nil {
			var b strings.Builder
			for _, p := range parts {
				if p.Text != nil {
					b.WriteString(*p.Text)
				}
			}
			text = b.String()
		}
	}
	return text, refusal
}

// visibleText is what a reader sees of a message: its content, else its
// refusal, and whether it is the refusal.
func visibleText(text, refusal string) (string, bool) {
	if text == "" && refusal != "" {
		return refusal, true
	}
	return text, false
}
