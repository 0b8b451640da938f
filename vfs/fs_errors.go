package vfs

import (
	"errors"
	"fmt"
)

// ErrHeadMoved is matched by a Heads implementation's revision-conflict error
// and by *ConflictError: the workspace head moved since it was read.
var ErrHeadMoved = errors.New("vfs: workspace head moved since it was read")

// ErrReadOnly is matched by *ReadOnlyError: a write to a snapshot mount.
var ErrReadOnly = errors.New("vfs: read-only mount")

// ErrInvalidPath is matched by *AbsPathError.
var ErrInvalidPath = errors.New("vfs: invalid session path")

// ErrEditMatch is matched by *EditError and by an edit with empty old text.
var ErrEditMatch = errors.New("old text must occur exactly once")

// AbsPathError reports a session path that is not absolute and clean.
type AbsPathError struct {
	Path   string
	Reason string
}

func (e *AbsPathError) Error() string {
	return fmt.Sprintf("vfs: invalid path %q: %s", e.Path, e.Reason)
}
func (e *AbsPathError) Unwrap() error { return ErrInvalidPath }

// NoMountError names a path that is neither inside a mount nor a directory
// above one. Mounts lists the mount paths, so the reader learns where to look.
type NoMountError struct {
	Path   string
	Mounts []string
}

func (e *NoMountError) Error() string {
	if len(e.Mounts) == 0 {
		return fmt.Sprintf("vfs: %s is not inside any mount; this session has no mounts", e.Path)
	}
	return fmt.Sprintf("vfs: %s is not inside any mount; mounts: %v", e.Path, e.Mounts)
}
func (e *NoMountError) Unwrap() error { return ErrNotFound }

// WrongKindError reports a directory where a file was wanted (IsDir) or a
// file where a directory was wanted. It matches ErrNotFound: what was asked
// for does not exist there.
type WrongKindError struct {
	Path  string
	IsDir bool
}

func (e *WrongKindError) Error() string {
	if e.IsDir {
		return fmt.Sprintf("vfs: %s is a directory, not a file", e.Path)
	}
	return fmt.Sprintf("vfs: %s is a file, not a directory", e.Path)
}
func (e *WrongKindError) Unwrap() error { return ErrNotFound }

// ReadOnlyError reports a write under a snapshot mount.
type ReadOnlyError struct {
	Path  string // the path written
	Mount string // the snapshot mount holding it
}

func (e *ReadOnlyError) Error() string {
	return fmt.Sprintf("vfs: cannot write %s: mount %s is a read-only snapshot", e.Path, e.Mount)
}
func (e *ReadOnlyError) Unwrap() error { return ErrReadOnly }

// ConflictError reports a write that could not land on the workspace head:
// another writer changed the same file (FileChanged), or the head kept moving
// through every retry.
type ConflictError struct {
	Path        string
	Workspace   string
	FileChanged bool
	Attempts    int
}

func (e *ConflictError) Error() string {
	if e.FileChanged {
		return fmt.Sprintf("vfs: %s was changed by another writer in workspace %q while this write ran; read it again before writing", e.Path, e.Workspace)
	}
	return fmt.Sprintf("vfs: workspace %q kept moving during %d attempts to write %s; try again", e.Workspace, e.Attempts, e.Path)
}
func (e *ConflictError) Unwrap() error { return ErrHeadMoved }

// EditError reports an edit whose old text occurs Count times instead of once.
type EditError struct {
	Path  string
	Count int
}

func (e *EditError) Error() string {
	if e.Count == 0 {
		return fmt.Sprintf("vfs: cannot edit %s: old text not found; it must match the file exactly, including whitespace", e.Path)
	}
	return fmt.Sprintf("vfs: cannot edit %s: old text occurs %d times; include more surrounding text so it occurs exactly once", e.Path, e.Count)
}
func (e *EditError) Unwrap() error { return ErrEditMatch }

// MountError reports a misconfigured FS: a bad mount path, a mount naming
// both or neither of a workspace and a snapshot, nested mounts, or a missing
// Heads. It is the caller's mistake, not the model's.
type MountError struct {
	Path   string
	Reason string
}

func (e *MountError) Error() string {
	return fmt.Sprintf("vfs: bad mount %q: %s", e.Path, e.Reason)
}

// storeError wraps a failure of the blob store, edge store or heads, so tools
// can tell a runtime failure from a mistake of the caller, even when the
// underlying error (a corrupt stored manifest, say) matches a vfs sentinel.
type storeError struct {
	op  string
	err error
}

func (e *storeError) Error() string { return fmt.Sprintf("vfs: %s: %v", e.op, e.err) }
func (e *storeError) Unwrap() error { return e.err }
