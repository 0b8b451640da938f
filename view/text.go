// Package view derives what clients read from the retained facts and bytes:
// run outputs, display text, transcripts. Views never write.
package view

import (
	"context"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/provider/visible"
)

// BlobReader is the part of a blob store a projection needs; an API client
// can provide it too.
type BlobReader = visible.BlobReader

// Visible is what a reader sees of stored content (visible.Visible).
type Visible = visible.Visible

// HasText reports whether content has a text form (visible.HasText).
func HasText(ref content.ContentRef) bool { return visible.HasText(ref) }

// ProjectText returns the visible text of stored content (visible.Text).
func ProjectText(ctx context.Context, blobs BlobReader, ref content.ContentRef) (string, error) {
	return visible.Text(ctx, blobs, ref)
}

// ProjectVisible is ProjectText that also says whether the text is a
// refusal (visible.Of).
func ProjectVisible(ctx context.Context, blobs BlobReader, ref content.ContentRef) (Visible, error) {
	return visible.Of(ctx, blobs, ref)
}
