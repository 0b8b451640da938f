// Package visible is what a reader sees of stored content: the text of
// provider-native material through its adapter's projection, plain text as
// itself, a parts record as its text with a line per other part. Views,
// and a parent session reading its sub-agent's output, read through it.
package visible

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider/anthropic"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/responses"
)

// BlobReader is the part of a blob store a projection needs; an API client
// can provide it too.
type BlobReader interface {
	Get(ctx context.Context, d content.Digest) ([]byte, error)
}

var _ BlobReader = blob.Store(nil)

// HasText reports whether content has a text form: provider-native
// material, text/* and parts records do; media (audio, images, other bytes) do not, and a
// view describes it by ref and media type alone.
func HasText(ref content.ContentRef) bool {
	return ref.ProviderKind != "" || strings.HasPrefix(ref.MediaType, "text/") || core.IsParts(ref)
}

// Text returns the visible text of stored content: provider-native
// material through its adapter's projection, plain text as itself. Media
// without a text form yields "" rather than invented text.
func Text(ctx context.Context, blobs BlobReader, ref content.ContentRef) (string, error) {
	v, err := Of(ctx, blobs, ref)
	return v.Text, err
}

// Visible is what a reader sees of stored content.
type Visible struct {
	Text string
	// Refusal says Text is the model's refusal: a message whose only
	// visible part is a refusal (OpenAI's refusal field or content part).
	// A refusal answers the turn; it is not a failure.
	Refusal bool
}

// Of is Text that also says whether the text is a
// refusal.
func Of(ctx context.Context, blobs BlobReader, ref content.ContentRef) (Visible, error) {
	data, err := blobs.Get(ctx, ref.Digest)
	if err != nil {
		return Visible{}, err
	}
	switch ref.ProviderKind {
	case chat.ProviderKindMessage:
		text, refusal, err := chat.ProjectMessage(data)
		return Visible{Text: text, Refusal: refusal}, err
	case responses.ProviderKindItem:
		// One kind for every Responses item: messages project their text,
		// reasoning its summary; other items (hosted tools) have no text.
		if text, refusal, err := responses.ProjectMessage(data); err == nil && text != "" {
			return Visible{Text: text, Refusal: refusal}, nil
		}
		text, err := responses.ProjectReasoning(data)
		return Visible{Text: text}, err
	}
	text, err := projectText(ref, data)
	return Visible{Text: text}, err
}

// projectText is the visible text of content that is never a refusal.
func projectText(ref content.ContentRef, data []byte) (string, error) {
	switch ref.ProviderKind {
	case chat.ProviderKindReasoning:
		return chat.ProjectReasoning(data)
	case anthropic.ProviderKindText:
		return anthropic.ProjectText(data)
	case anthropic.ProviderKindThinking, anthropic.ProviderKindRedactedThinking:
		return anthropic.ProjectReasoning(data)
	case anthropic.ProviderKindToolUse, anthropic.ProviderKindBlock:
		return "", nil
	case core.ProviderKindTranscript:
		// A transcript of audio input displays its text; the label naming
		// the file is the adapters' rendering for the model.
		rec, err := core.DecodeTranscript(data)
		if err != nil {
			return "", err
		}
		return rec.Text, nil
	case "":
		if core.IsParts(ref) {
			return partsText(data)
		}
		if strings.HasPrefix(ref.MediaType, "text/") && utf8.Valid(data) {
			return string(data), nil
		}
		return "", nil
	}
	return "", fmt.Errorf("no text projection for provider kind %q", ref.ProviderKind)
}

// partsText is a parts record as a reader sees it: its text parts, and a
// line naming each other part, in order.
func partsText(data []byte) (string, error) {
	parts, err := core.DecodeParts(data)
	if err != nil {
		return "", err
	}
	lines := make([]string, len(parts))
	for i, p := range parts {
		lines[i] = p.Text
		if p.Ref != nil {
			lines[i] = p.Describe()
		}
	}
	return strings.Join(lines, "\n"), nil
}
