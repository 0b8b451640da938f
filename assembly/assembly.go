package assembly

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"unicode/utf8"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/vfs"
)

// Tree is one linked file tree as of the refresh: a workspace's head or a
// pinned snapshot.
type Tree struct {
	Mount     string         // absolute mount path, e.g. "/work"
	Workspace string         // "" for a snapshot link
	Snapshot  content.Digest // manifest digest
	Manifest  vfs.Manifest
}

// AbsPath returns the path the model sees for manifest path p.
func (t Tree) AbsPath(p string) string { return path.Join("/", t.Mount, p) }

// Limits bound what discovery reads. A zero or negative field means the
// default.
type Limits struct {
	// MaxSourceBytes bounds one prompt source, SKILL.md or agent profile.
	MaxSourceBytes int64
	// MaxTotalBytes bounds the included prompt sources of one tree.
	MaxTotalBytes int64
}

// Default limit values.
const (
	DefaultMaxSourceBytes = 64 << 10
	DefaultMaxTotalBytes  = 256 << 10
)

func (l Limits) effective() Limits {
	if l.MaxSourceBytes <= 0 {
		l.MaxSourceBytes = DefaultMaxSourceBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = DefaultMaxTotalBytes
	}
	return l
}

// Warning explains why a file was left out.
type Warning struct {
	Path    string `json:"path"` // absolute path as the model sees it
	Message string `json:"message"`
}

// PreviewBytes bounds the Preview of an assembled document.
const PreviewBytes = 256

// preview returns at most PreviewBytes of text, cut on a rune boundary.
func preview(text []byte) string {
	if len(text) <= PreviewBytes {
		return string(text)
	}
	cut := PreviewBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return string(text[:cut]) + "…"
}

// readSource loads a file of tree t, refusing it (with a warning, not an
// error) when it is too large or not UTF-8. Store failures are errors: they
// say nothing about the file.
func readSource(ctx context.Context, blobs blob.Store, t Tree, e vfs.Entry, max int64) ([]byte, *Warning, error) {
	abs := t.AbsPath(e.Path)
	if e.Size > max {
		return nil, &Warning{Path: abs, Message: fmt.Sprintf("omitted: %d bytes exceeds the limit of %d bytes per file", e.Size, max)}, nil
	}
	data, err := blobs.Get(ctx, e.Ref.Digest)
	if err != nil {
		return nil, nil, fmt.Errorf("assembly: read %s: %w", abs, err)
	}
	if int64(len(data)) != e.Size {
		return nil, nil, fmt.Errorf("assembly: %s: manifest says %d bytes, blob has %d", abs, e.Size, len(data))
	}
	if !utf8.Valid(data) {
		return nil, &Warning{Path: abs, Message: "omitted: not valid UTF-8"}, nil
	}
	return data, nil, nil
}

// putDoc stores data and records edges from it to every digest of kids: the
// writer of a format declares what its embedded refs retain.
func putDoc(ctx context.Context, blobs blob.Store, edges vfs.Edges, data []byte, mediaType string, kids []content.Digest) (content.ContentRef, error) {
	ref, err := blob.PutRef(ctx, blobs, data, mediaType, "")
	if err != nil {
		return content.ContentRef{}, fmt.Errorf("assembly: store %s: %w", mediaType, err)
	}
	kids = slices.Clone(kids)
	content.SortDigests(kids)
	kids = slices.Compact(kids)
	if len(kids) > 0 {
		if err := edges.PutEdges(ctx, ref.Digest, kids); err != nil {
			return content.ContentRef{}, fmt.Errorf("assembly: record edges of %s: %w", ref.Digest, err)
		}
	}
	return ref, nil
}

// decodeStrict decodes one JSON document into v, refusing unknown fields and
// trailing data so a document of another shape is not silently misread.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
		return fmt.Errorf("trailing data after document")
	}
	return nil
}
