package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairn-agents/cairn/content"
)

// Workspace is a named, mutable head over snapshot manifests. Every move of
// the head increments Revision; a new workspace is at revision 1.
type Workspace struct {
	Name        string
	Revision    int64
	Head        content.Digest // the current snapshot manifest
	CreatedAtMs int64
	UpdatedAtMs int64 // time of the last create or move
}

// Snapshot records a snapshot manifest in the universe. The record holds its
// manifest: a collector does not delete a recorded manifest.
type Snapshot struct {
	Manifest    content.Digest
	CreatedAtMs int64
}

// Workspaces stores the workspaces and snapshot records of one universe.
// Heads and snapshots reference blobs of that universe, which must exist; a
// head or snapshot row holds its blob against collection. In every method a
// limit <= 0 means no limit.
type Workspaces interface {
	// CreateWorkspace creates a workspace at revision 1 with the given head.
	// An existing name is ErrWorkspaceExists; an absent head blob is a
	// *blob.MissingError, and nothing is written.
	CreateWorkspace(ctx context.Context, name string, head content.Digest) (Workspace, error)
	// Workspace returns a workspace; ErrWorkspaceNotFound if absent.
	Workspace(ctx context.Context, name string) (Workspace, error)
	// Workspaces lists workspaces ordered by name (byte order), after the
	// given name, up to limit.
	Workspaces(ctx context.Context, afterName string, limit int) ([]Workspace, error)
	// MoveHead points the workspace at head and increments its revision,
	// only if its revision is expectedRevision: otherwise it returns a
	// *WorkspaceConflictError and changes nothing. An unknown workspace is
	// ErrWorkspaceNotFound; an absent head blob is a *blob.MissingError.
	MoveHead(ctx context.Context, name string, expectedRevision int64, head content.Digest) (Workspace, error)
	// PutSnapshot records manifest (which must exist, else *blob.MissingError)
	// as a snapshot. Recording it again is a no-op returning the first record.
	PutSnapshot(ctx context.Context, manifest content.Digest) (Snapshot, error)
	// Snapshot returns a snapshot record; ErrSnapshotNotFound if absent.
	Snapshot(ctx context.Context, manifest content.Digest) (Snapshot, error)
}

var (
	// ErrWorkspaceExists is returned by CreateWorkspace for a taken name.
	ErrWorkspaceExists = errors.New("workspace already exists")
	// ErrWorkspaceNotFound is returned for a name with no workspace.
	ErrWorkspaceNotFound = errors.New("workspace not found")
	// ErrWorkspaceConflict is the sentinel inside *WorkspaceConflictError.
	ErrWorkspaceConflict = errors.New("workspace revision conflict")
	// ErrSnapshotNotFound is returned for a manifest with no snapshot record.
	ErrSnapshotNotFound = errors.New("snapshot not found")
	// ErrInvalidWorkspace is matched by errors for requests no backend would
	// accept: a malformed workspace name or a zero head or manifest digest.
	ErrInvalidWorkspace = errors.New("invalid workspace request")
)

// WorkspaceConflictError says the workspace moved since the caller read it.
type WorkspaceConflictError struct {
	Name     string
	Expected int64
	Actual   int64
}

func (e *WorkspaceConflictError) Error() string {
	return fmt.Sprintf("workspace %s: expected revision %d, actual %d", e.Name, e.Expected, e.Actual)
}
func (e *WorkspaceConflictError) Unwrap() error { return ErrWorkspaceConflict }

// MaxWorkspaceNameLen bounds workspace names.
const MaxWorkspaceNameLen = 128

// ValidateWorkspaceName accepts 1–MaxWorkspaceNameLen characters of
// [A-Za-z0-9._-]. The error matches ErrInvalidWorkspace.
func ValidateWorkspaceName(name string) error {
	ok := name != "" && len(name) <= MaxWorkspaceNameLen
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	if !ok {
		return fmt.Errorf("%w: workspace name %q must be 1–%d characters of [A-Za-z0-9._-]",
			ErrInvalidWorkspace, name, MaxWorkspaceNameLen)
	}
	return nil
}

// PrepareWorkspace checks a CreateWorkspace or MoveHead request the same way
// in every backend.
func PrepareWorkspace(name string, head content.Digest) error {
	if err := ValidateWorkspaceName(name); err != nil {
		return err
	}
	if head.IsZero() {
		return fmt.Errorf("%w: zero head digest for workspace %s", ErrInvalidWorkspace, name)
	}
	return nil
}

// PrepareSnapshot checks a PutSnapshot request the same way in every backend.
func PrepareSnapshot(manifest content.Digest) error {
	if manifest.IsZero() {
		return fmt.Errorf("%w: zero snapshot manifest digest", ErrInvalidWorkspace)
	}
	return nil
}
