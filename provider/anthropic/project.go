package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairn-agents/cairn/provider/rawjson"
)

// Projections derive display material from stored native bytes. They are
// views: the stored blocks stay the one authoritative copy, and nothing here
// is ever written back.

// ProjectText returns the visible text of a stored ProviderKindText blob (an
// array of text blocks): the blocks' texts joined as they are, since
// Anthropic splits one answer into blocks at citation boundaries. A single
// text block object is accepted too.
func ProjectText(native []byte) (string, error) {
	blocks, err := textBlocks(native)
	if err != nil {
		return "", fmt.Errorf("anthropic: project text: %w", err)
	}
	var b strings.Builder
	for _, ms := range blocks {
		s, _ := rawjson.String(rawjson.Lookup(ms, "text"))
		b.WriteString(s)
	}
	return b.String(), nil
}

// ProjectReasoning returns the visible reasoning of a stored thinking block:
// its `thinking` text. A redacted_thinking block has none to show, so it
// projects to "". Signatures and redacted data are never returned: they are
// opaque continuation material, replayed but not shown.
func ProjectReasoning(native []byte) (string, error) {
	b, ms, err := parseBlock(native)
	if err != nil {
		return "", fmt.Errorf("anthropic: project reasoning: %w", err)
	}
	switch b.typ {
	case typeThinking:
		text, _ := rawjson.String(rawjson.Lookup(ms, "thinking"))
		return text, nil
	case typeRedactedThinking:
		return "", nil
	}
	return "", fmt.Errorf("anthropic: project reasoning: a %q block is not reasoning", b.typ)
}

// Citation is one citation of a stored text run, placed in ProjectText's
// output so a view can mark the cited span.
type Citation struct {
	// Start and End are byte offsets of the cited block's text within the
	// entry's ProjectText.
	Start, End int
	// Raw is the citation object as stored (char_location, page_location,
	// web_search_result_location, …), unknown members included.
	Raw json.RawMessage
}

// ProjectCitations returns the citations of a stored ProviderKindText blob in
// order, or nil when it has none.
func ProjectCitations(native []byte) ([]Citation, error) {
	blocks, err := textBlocks(native)
	if err != nil {
		return nil, fmt.Errorf("anthropic: project citations: %w", err)
	}
	var out []Citation
	offset := 0
	for _, ms := range blocks {
		text, _ := rawjson.String(rawjson.Lookup(ms, "text"))
		start := offset
		offset += len(text)
		if !hasCitations(ms) {
			continue
		}
		cites, err := rawjson.ArrayElements(rawjson.Lookup(ms, "citations"))
		if err != nil {
			return nil, fmt.Errorf("anthropic: project citations: %w", err)
		}
		for _, c := range cites {
			out = append(out, Citation{Start: start, End: offset, Raw: json.RawMessage(c)})
		}
	}
	return out, nil
}

// textBlocks reads a text run (or one text block) as member lists.
func textBlocks(native []byte) ([][]rawjson.Member, error) {
	trimmed := strings.TrimSpace(string(native))
	if strings.HasPrefix(trimmed, "{") {
		ms, err := rawjson.ObjectMembers(native)
		if err != nil {
			return nil, err
		}
		return [][]rawjson.Member{ms}, nil
	}
	elems, err := rawjson.ArrayElements(native)
	if err != nil {
		return nil, err
	}
	out := make([][]rawjson.Member, 0, len(elems))
	for i, e := range elems {
		ms, err := rawjson.ObjectMembers(e)
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
		if t, _ := rawjson.String(rawjson.Lookup(ms, "type")); t != typeText {
			return nil, fmt.Errorf("block %d is %q, not text", i, t)
		}
		out = append(out, ms)
	}
	return out, nil
}
