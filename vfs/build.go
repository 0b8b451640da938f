package vfs

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
)

// Media types guessed for file blobs.
const (
	MediaMarkdown = "text/markdown; charset=utf-8"
	MediaText     = content.MediaText
	MediaBinary   = "application/octet-stream"
)

var textExts = map[string]bool{
	".txt": true, ".text": true, ".json": true, ".yaml": true, ".yml": true, ".toml": true,
	".go": true, ".py": true, ".js": true, ".ts": true, ".tsx": true, ".jsx": true, ".rs": true,
	".c": true, ".h": true, ".cc": true, ".cpp": true, ".java": true, ".rb": true, ".sh": true,
	".html": true, ".css": true, ".csv": true, ".xml": true, ".sql": true, ".ini": true, ".cfg": true,
	".rst": true, ".log": true, ".mod": true, ".sum": true,
}

// MediaTypeFor guesses a file's media type: MediaMarkdown for .md and
// .markdown, MediaText for well-known text extensions and for any other file
// whose bytes are valid UTF-8 without NUL, MediaBinary otherwise.
func MediaTypeFor(p string, data []byte) string {
	ext := strings.ToLower(path.Ext(p))
	switch {
	case ext == ".md" || ext == ".markdown":
		return MediaMarkdown
	case textExts[ext]:
		return MediaText
	case utf8.Valid(data) && !bytes.ContainsRune(data, 0):
		return MediaText
	}
	return MediaBinary
}

// Builder collects files into a manifest, storing each file's bytes as it is
// added. Limits are checked before bytes are stored. A Builder is not safe for
// concurrent use.
type Builder struct {
	blobs   blob.Store
	limits  Limits
	entries []Entry
	paths   map[string]struct{}
	total   int64
}

// NewBuilder returns an empty Builder storing into blobs. A zero Limits means
// the defaults.
func NewBuilder(blobs blob.Store, limits Limits) *Builder {
	return &Builder{blobs: blobs, limits: limits.effective(), paths: map[string]struct{}{}}
}

// Add stores data under path p (a manifest path, see ValidPath) with a media
// type from MediaTypeFor.
func (b *Builder) Add(ctx context.Context, p string, data []byte) (Entry, error) {
	if err := b.check(p, int64(len(data))); err != nil {
		return Entry{}, err
	}
	ref, err := blob.PutRef(ctx, b.blobs, data, MediaTypeFor(p, data), "")
	if err != nil {
		return Entry{}, fmt.Errorf("vfs: store %q: %w", p, err)
	}
	e := Entry{Path: p, Ref: ref, Size: int64(len(data))}
	b.add(e)
	return e, nil
}

// AddRef adds a file whose bytes are already stored.
func (b *Builder) AddRef(p string, ref content.ContentRef, size int64) error {
	if err := ref.Validate(); err != nil {
		return &EntryError{Path: p, Reason: err.Error()}
	}
	if size < 0 {
		return &EntryError{Path: p, Reason: fmt.Sprintf("negative size %d", size)}
	}
	if err := b.check(p, size); err != nil {
		return err
	}
	b.add(Entry{Path: p, Ref: ref, Size: size})
	return nil
}

func (b *Builder) check(p string, size int64) error {
	if err := ValidPath(p); err != nil {
		return err
	}
	if err := b.limits.checkPath(p); err != nil {
		return err
	}
	if err := checkSegments(p); err != nil {
		return err
	}
	if _, dup := b.paths[p]; dup {
		return &OrderError{Prev: p, Path: p, Duplicate: true}
	}
	if n := len(b.entries) + 1; n > b.limits.MaxFiles {
		return &LimitError{Limit: "files", Max: int64(b.limits.MaxFiles), Got: int64(n), Path: p}
	}
	if err := b.limits.checkFile(p, size); err != nil {
		return err
	}
	if t := b.total + size; t > b.limits.MaxTotalBytes {
		return &LimitError{Limit: "total bytes", Max: b.limits.MaxTotalBytes, Got: t, Path: p}
	}
	return nil
}

func (b *Builder) add(e Entry) {
	b.entries = append(b.entries, e)
	b.paths[e.Path] = struct{}{}
	b.total += e.Size
}

// Manifest returns the manifest of the files added so far (sorted, totals
// computed, validated: a file that is also another's directory fails here).
func (b *Builder) Manifest() (Manifest, error) {
	return NewManifest(b.entries, b.limits)
}

// Build stores every file of files (manifest path → bytes) and returns their
// manifest. It does not store the manifest itself; see WriteManifest.
func Build(ctx context.Context, blobs blob.Store, files map[string][]byte, limits Limits) (Manifest, error) {
	b := NewBuilder(blobs, limits)
	// Check the count before storing anything.
	if l := b.limits; len(files) > l.MaxFiles {
		return Manifest{}, &LimitError{Limit: "files", Max: int64(l.MaxFiles), Got: int64(len(files))}
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if _, err := b.Add(ctx, p, files[p]); err != nil {
			return Manifest{}, err
		}
	}
	return b.Manifest()
}
