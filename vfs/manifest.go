package vfs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-agents/cairn/content"
)

// Manifest format identity, written inside every manifest.
const (
	FormatName    = "cairn.vfs.snapshot"
	FormatVersion = 1
	// MediaType is the media type of a stored manifest blob.
	MediaType = "application/vnd.cairn.vfs.snapshot+json"
)

// Entry is one file of a snapshot.
type Entry struct {
	Path string             `json:"path"`
	Ref  content.ContentRef `json:"ref"`
	Size int64              `json:"size"`
}

// Totals summarise a snapshot; they are stored and checked on read.
type Totals struct {
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
}

// Manifest is a snapshot of a file tree: entries sorted by path (byte order),
// paths unique, no file path also a directory of another. Treat a Manifest as
// immutable: the functions here return new manifests and never modify their
// arguments' Files slices.
type Manifest struct {
	Files  []Entry
	Totals Totals
}

// wire is the JSON shape of a manifest.
type wire struct {
	Format  string  `json:"format"`
	Version int     `json:"version"`
	Files   []Entry `json:"files"`
	Totals  Totals  `json:"totals"`
}

// NewManifest sorts entries by path, computes totals and validates the result
// against limits. It builds a tree to write, so it also refuses a segment
// over MaxSegmentBytes, which Validate (used on stored manifests) does not.
// entries is not modified.
func NewManifest(entries []Entry, limits Limits) (Manifest, error) {
	files := slices.Clone(entries)
	slices.SortFunc(files, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	if files == nil {
		files = []Entry{}
	}
	m := Manifest{Files: files, Totals: computeTotals(files)}
	if err := m.Validate(limits); err != nil {
		return Manifest{}, err
	}
	for _, e := range files {
		if err := checkSegments(e.Path); err != nil {
			return Manifest{}, err
		}
	}
	return m, nil
}

func computeTotals(files []Entry) Totals {
	t := Totals{Files: int64(len(files))}
	for _, e := range files {
		t.Bytes += e.Size
	}
	return t
}

// Validate checks the manifest's structure (paths, order, refs, sizes, no
// file/directory conflicts, totals) and limits. A zero Limits means the
// defaults.
func (m Manifest) Validate(limits Limits) error {
	l := limits.effective()
	if n := len(m.Files); n > l.MaxFiles {
		return &LimitError{Limit: "files", Max: int64(l.MaxFiles), Got: int64(n)}
	}
	var total int64
	files := make(map[string]struct{}, len(m.Files))
	for i, e := range m.Files {
		if err := ValidPath(e.Path); err != nil {
			return err
		}
		if err := l.checkPath(e.Path); err != nil {
			return err
		}
		if i > 0 {
			switch prev := m.Files[i-1].Path; {
			case prev == e.Path:
				return &OrderError{Prev: prev, Path: e.Path, Duplicate: true}
			case prev > e.Path:
				return &OrderError{Prev: prev, Path: e.Path}
			}
		}
		if err := e.Ref.Validate(); err != nil {
			return &EntryError{Path: e.Path, Reason: err.Error()}
		}
		if e.Size < 0 {
			return &EntryError{Path: e.Path, Reason: fmt.Sprintf("negative size %d", e.Size)}
		}
		if err := l.checkFile(e.Path, e.Size); err != nil {
			return err
		}
		total += e.Size
		if total > l.MaxTotalBytes {
			return &LimitError{Limit: "total bytes", Max: l.MaxTotalBytes, Got: total, Path: e.Path}
		}
		files[e.Path] = struct{}{}
	}
	// A file may not also be a directory: no ancestor of any path is a file.
	for _, e := range m.Files {
		for i := len(e.Path) - 1; i > 0; i-- {
			if e.Path[i] != '/' {
				continue
			}
			if _, ok := files[e.Path[:i]]; ok {
				return &PathError{Path: e.Path, Reason: fmt.Sprintf("parent %q is a file", e.Path[:i])}
			}
		}
	}
	if actual := computeTotals(m.Files); actual != m.Totals {
		return &TotalsError{Declared: m.Totals, Actual: actual}
	}
	return nil
}

// MarshalManifest validates m against the default limits and encodes it as
// canonical JSON.
func MarshalManifest(m Manifest) ([]byte, error) {
	if err := m.Validate(Limits{}); err != nil {
		return nil, err
	}
	files := m.Files
	if files == nil {
		files = []Entry{}
	}
	return content.MarshalCanonical(wire{Format: FormatName, Version: FormatVersion, Files: files, Totals: m.Totals})
}

// ParseManifest decodes and validates a manifest against the default limits.
// Unknown fields, an unknown format or version, bad paths, unsorted or
// duplicate entries, invalid refs, wrong totals and exceeded limits are
// refused with the typed errors of this package.
func ParseManifest(data []byte) (Manifest, error) {
	return ParseManifestLimits(data, Limits{})
}

// ParseManifestLimits is ParseManifest with explicit limits.
func ParseManifestLimits(data []byte, limits Limits) (Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w wire
	if err := dec.Decode(&w); err != nil {
		return Manifest{}, &FormatError{Err: err}
	}
	for _, c := range data[dec.InputOffset():] {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return Manifest{}, &FormatError{Err: fmt.Errorf("trailing data after manifest")}
		}
	}
	if w.Format != FormatName || w.Version != FormatVersion {
		return Manifest{}, &FormatError{Format: w.Format, Version: w.Version}
	}
	if w.Files == nil {
		return Manifest{}, &FormatError{Err: fmt.Errorf("missing files array")}
	}
	m := Manifest{Files: w.Files, Totals: w.Totals}
	if err := m.Validate(limits); err != nil {
		return Manifest{}, err
	}
	return m, nil
}
