package runtime

import (
	"context"
	"strings"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// ToolOutputPart is one part of a tool's output that has several (an MCP
// tool's text and an image, say): text, or the bytes of another media type.
type ToolOutputPart struct {
	MediaType string
	Data      []byte
}

// blobPartTokens is what a part that is not text is assumed to cost the
// model (an image of about a megapixel).
const blobPartTokens = 1600

// putParts stores a tool output of several parts: every part that is not
// text as its own blob, and a parts record (core.MediaParts) that names
// them and holds them against collection.
func (x *Executor) putParts(ctx context.Context, parts []ToolOutputPart) (core.EntryInput, error) {
	var (
		record []core.ContentPart
		kids   []content.Digest
		shown  strings.Builder // the text and a line per other part: preview and estimate
		blobs  int64
	)
	for _, p := range parts {
		if p.MediaType == "" || content.IsText(p.MediaType) {
			if len(p.Data) > 0 {
				record = append(record, core.ContentPart{Text: string(p.Data)})
				shown.Write(p.Data)
				shown.WriteString("\n")
			}
			continue
		}
		ref, err := blob.PutRef(ctx, x.Blobs, p.Data, p.MediaType, "")
		if err != nil {
			return core.EntryInput{}, err
		}
		part := core.ContentPart{Ref: &ref, Bytes: int64(len(p.Data))}
		record = append(record, part)
		kids = append(kids, ref.Digest)
		shown.WriteString(part.Describe() + "\n")
		blobs++
	}
	data, err := core.EncodeParts(record)
	if err != nil {
		return core.EntryInput{}, err
	}
	ref, err := blob.PutRef(ctx, x.Blobs, data, core.MediaParts, "")
	if err != nil {
		return core.EntryInput{}, err
	}
	if len(kids) > 0 && x.Files != nil {
		if err := x.Files.PutEdges(ctx, ref.Digest, kids); err != nil {
			return core.EntryInput{}, err
		}
	}
	text := strings.TrimSuffix(shown.String(), "\n")
	est := provider.Estimate([]byte(text))
	est.Tokens += blobs * blobPartTokens
	return core.EntryInput{Content: ref, TokenEstimate: est, Preview: previewOf([]byte(text))}, nil
}
