package vfs

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/cairn-agents/cairn/blob"
)

// find returns the index of p in m.Files, or where it would be inserted.
func find(m Manifest, p string) (int, bool) {
	i := sort.Search(len(m.Files), func(i int) bool { return m.Files[i].Path >= p })
	return i, i < len(m.Files) && m.Files[i].Path == p
}

// WithFile returns a new manifest with e added or replacing the entry at
// e.Path; every other entry (and its ref) is carried over unchanged. The result
// is validated against limits (a zero Limits means the defaults). m is not
// modified.
func WithFile(m Manifest, e Entry, limits Limits) (Manifest, error) {
	i, found := find(m, e.Path)
	files := make([]Entry, 0, len(m.Files)+1)
	files = append(files, m.Files[:i]...)
	files = append(files, e)
	if found {
		i++
	}
	files = append(files, m.Files[i:]...)
	out := Manifest{Files: files, Totals: computeTotals(files)}
	if err := out.Validate(limits); err != nil {
		return Manifest{}, err
	}
	return out, nil
}

// WithoutFile returns a new manifest without the file at p (*NotFoundError if
// there is none). m is not modified.
func WithoutFile(m Manifest, p string) (Manifest, error) {
	i, found := find(m, p)
	if !found {
		return Manifest{}, &NotFoundError{Path: p}
	}
	files := make([]Entry, 0, len(m.Files)-1)
	files = append(files, m.Files[:i]...)
	files = append(files, m.Files[i+1:]...)
	return Manifest{Files: files, Totals: computeTotals(files)}, nil
}

// Edit stores data as the new content of p and returns the new manifest and
// the new entry. An existing file keeps its media type; a new one gets
// MediaTypeFor. Limits (and MaxSegmentBytes) are checked before the bytes
// are stored.
func Edit(ctx context.Context, blobs blob.Store, m Manifest, p string, data []byte, limits Limits) (Manifest, Entry, error) {
	l := limits.effective()
	if err := ValidPath(p); err != nil {
		return Manifest{}, Entry{}, err
	}
	if err := l.checkPath(p); err != nil {
		return Manifest{}, Entry{}, err
	}
	if err := checkSegments(p); err != nil {
		return Manifest{}, Entry{}, err
	}
	if err := l.checkFile(p, int64(len(data))); err != nil {
		return Manifest{}, Entry{}, err
	}
	mediaType := MediaTypeFor(p, data)
	if old, ok := Lookup(m, p); ok {
		mediaType = old.Ref.MediaType
	}
	ref, err := blob.PutRef(ctx, blobs, data, mediaType, "")
	if err != nil {
		return Manifest{}, Entry{}, fmt.Errorf("vfs: store %q: %w", p, err)
	}
	e := Entry{Path: p, Ref: ref, Size: int64(len(data))}
	out, err := WithFile(m, e, l)
	if err != nil {
		return Manifest{}, Entry{}, err
	}
	return out, e, nil
}

// hasDirPrefix reports whether p lies under dir ("" is the root).
func hasDirPrefix(p, dir string) bool {
	return dir == "" || strings.HasPrefix(p, dir+"/")
}
