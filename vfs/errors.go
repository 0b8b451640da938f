package vfs

import (
	"errors"
	"fmt"
)

// ErrInvalidManifest is matched (errors.Is) by every error describing a
// malformed manifest or path: *FormatError, *PathError, *OrderError,
// *TotalsError.
var ErrInvalidManifest = errors.New("invalid vfs manifest")

// ErrLimit is matched by *LimitError.
var ErrLimit = errors.New("vfs limit exceeded")

// ErrNotFound is matched by *NotFoundError.
var ErrNotFound = errors.New("vfs path not found")

// FormatError reports a manifest whose format name or version is not one this
// package reads, or whose JSON does not decode as a manifest.
type FormatError struct {
	Format  string
	Version int
	Err     error // decoding error, if any
}

func (e *FormatError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("invalid vfs manifest: %v", e.Err)
	}
	return fmt.Sprintf("invalid vfs manifest: unsupported format %q version %d (want %q version %d)",
		e.Format, e.Version, FormatName, FormatVersion)
}
func (e *FormatError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidManifest}
	}
	return []error{ErrInvalidManifest, e.Err}
}

// PathError reports a path that is not a clean relative slash path, or that
// conflicts with another entry (a file that is also a directory).
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string {
	return fmt.Sprintf("invalid vfs path %q: %s", e.Path, e.Reason)
}
func (e *PathError) Unwrap() error { return ErrInvalidManifest }

// OrderError reports entries that are not strictly sorted by path (a duplicate
// path is Duplicate).
type OrderError struct {
	Prev, Path string
	Duplicate  bool
}

func (e *OrderError) Error() string {
	if e.Duplicate {
		return fmt.Sprintf("invalid vfs manifest: duplicate path %q", e.Path)
	}
	return fmt.Sprintf("invalid vfs manifest: path %q sorted after %q", e.Path, e.Prev)
}
func (e *OrderError) Unwrap() error { return ErrInvalidManifest }

// TotalsError reports declared totals that differ from the entries.
type TotalsError struct {
	Declared, Actual Totals
}

func (e *TotalsError) Error() string {
	return fmt.Sprintf("invalid vfs manifest: totals declare %d files, %d bytes; entries hold %d files, %d bytes",
		e.Declared.Files, e.Declared.Bytes, e.Actual.Files, e.Actual.Bytes)
}
func (e *TotalsError) Unwrap() error { return ErrInvalidManifest }

// EntryError reports an entry with an invalid ref or a negative size.
type EntryError struct {
	Path   string
	Reason string
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("invalid vfs manifest entry %q: %s", e.Path, e.Reason)
}
func (e *EntryError) Unwrap() error { return ErrInvalidManifest }

// LimitError names the limit exceeded, its maximum, the value that exceeded it
// and, where one is to blame, the offending path.
type LimitError struct {
	Limit string // "files", "depth", "path bytes", "segment bytes", "file bytes", "total bytes"
	Max   int64
	Got   int64
	Path  string
}

func (e *LimitError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("vfs limit exceeded: %s %d > max %d at %q", e.Limit, e.Got, e.Max, e.Path)
	}
	return fmt.Sprintf("vfs limit exceeded: %s %d > max %d", e.Limit, e.Got, e.Max)
}
func (e *LimitError) Unwrap() error { return ErrLimit }

// NotFoundError names a path that is not in the manifest.
type NotFoundError struct{ Path string }

func (e *NotFoundError) Error() string { return fmt.Sprintf("vfs: %q not found", e.Path) }
func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// UnsupportedFileError names a file ImportDir will not import (a device,
// socket or pipe).
type UnsupportedFileError struct {
	Path string
	Kind string
}

func (e *UnsupportedFileError) Error() string {
	return fmt.Sprintf("vfs import: %q is a %s; only regular files, directories and symlinks to files are imported", e.Path, e.Kind)
}
