package api

import (
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/vfs"
)

// Workspace, snapshot and file methods.
const (
	MethodWorkspacesCreate = "vfs/workspaces/create"
	MethodWorkspacesList   = "vfs/workspaces/list"
	MethodWorkspacesRead   = "vfs/workspaces/read"
	MethodWorkspacesCommit = "vfs/workspaces/commit"
	MethodSnapshotsCreate  = "vfs/snapshots/create"
	MethodSnapshotsRead    = "vfs/snapshots/read"
	MethodFilesRead        = "vfs/files/read"
	MethodFilesWrite       = "vfs/files/write"
	MethodFilesList        = "vfs/files/list"
	MethodBlobsMissing     = "blobs/missing"
)

// Error kinds of the vfs methods.
const (
	// KindWorkspaceExists refuses vfs/workspaces/create for a taken name.
	KindWorkspaceExists = "workspace_exists"
	// KindLimitExceeded carries a vfs limit violation (files, depth, path
	// bytes, file bytes or total bytes) with the vfs message.
	KindLimitExceeded = "limit_exceeded"
)

// MaxBlobsMissing bounds the digests of one blobs/missing call: enough for
// every file of the largest tree a manifest may hold.
const MaxBlobsMissing = vfs.DefaultMaxFiles

// WorkspaceHead is a workspace's current manifest.
type WorkspaceHead struct {
	Ref content.ContentRef `json:"ref"`
}

// WorkspaceParams name one workspace.
type WorkspaceParams struct {
	Workspace string `json:"workspace"`
}

type WorkspaceCreateParams struct {
	Workspace string `json:"workspace"`
	// Snapshot is a recorded snapshot to start from; absent starts from an
	// empty tree.
	Snapshot *RefParam `json:"snapshot,omitempty"`
}

// WorkspaceResult is a workspace's revision and head after a change.
type WorkspaceResult struct {
	Workspace string        `json:"workspace"`
	Revision  int64         `json:"revision"`
	Head      WorkspaceHead `json:"head"`
}

type WorkspaceListParams struct {
	After string `json:"after,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

type WorkspaceInfo struct {
	Workspace   string        `json:"workspace"`
	Revision    int64         `json:"revision"`
	Head        WorkspaceHead `json:"head"`
	CreatedAtMs int64         `json:"createdAtMs"`
	UpdatedAtMs int64         `json:"updatedAtMs"`
}

type WorkspaceListResult struct {
	Workspaces []WorkspaceInfo `json:"workspaces"`
}

// WorkspaceReadResult is a workspace and the totals of its head.
type WorkspaceReadResult struct {
	Workspace string        `json:"workspace"`
	Revision  int64         `json:"revision"`
	Head      WorkspaceHead `json:"head"`
	Files     int64         `json:"files"`
	Bytes     int64         `json:"bytes"`
}

// WorkspaceCommitParams replace a workspace's whole tree with Files, whose
// blobs must already be stored and whose sizes must be their blobs'.
// ExpectedRevision 0 only creates the workspace; another value only replaces
// that revision; absent replaces whatever the head is then (or creates).
type WorkspaceCommitParams struct {
	Workspace        string      `json:"workspace"`
	ExpectedRevision *int64      `json:"expectedRevision,omitempty"`
	Files            CommitFiles `json:"files"`
}

// CommitFiles are the files of a committed tree: [{path, ref, size}], each
// ref a ref object or a digest string. A digest string gets the media type
// its path suggests (text for well-known text extensions, else binary).
type CommitFiles []vfs.Entry

// fileEntryParam is one file of CommitFiles as received.
type fileEntryParam struct {
	Path string   `json:"path"`
	Ref  RefParam `json:"ref"`
	Size int64    `json:"size"`
}

// UnmarshalJSONFrom decodes the files with the decoder's own (strict)
// options, so errors name their place (files[2].ref).
func (f *CommitFiles) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	var in []fileEntryParam
	if err := jsonv2.UnmarshalDecode(dec, &in); err != nil {
		return err
	}
	if in == nil {
		*f = nil // absent or null: refused as missing
		return nil
	}
	out := make(CommitFiles, len(in))
	for i, e := range in {
		// The bytes are not read for a digest string: a NUL stands for them,
		// so an unknown extension means binary.
		out[i] = vfs.Entry{Path: e.Path, Ref: e.Ref.Ref(vfs.MediaTypeFor(e.Path, []byte{0})), Size: e.Size}
	}
	*f = out
	return nil
}

// SnapshotCreateResult names the snapshot by the ref of its manifest.
type SnapshotCreateResult struct {
	Snapshot content.ContentRef `json:"snapshot"`
	Files    int64              `json:"files"`
	Bytes    int64              `json:"bytes"`
}

type SnapshotParams struct {
	Snapshot RefParam `json:"snapshot"`
}

// SnapshotReadResult lists every file of a snapshot, in path order.
type SnapshotReadResult struct {
	Snapshot  content.ContentRef `json:"snapshot"`
	Files     []vfs.Entry        `json:"files"`
	FileCount int64              `json:"fileCount"`
	Bytes     int64              `json:"bytes"`
}

// FileParams name a file (or, for vfs/files/list, a directory; empty is the
// root) in exactly one of a workspace's head and a snapshot.
type FileParams struct {
	Workspace string    `json:"workspace,omitempty"`
	Snapshot  *RefParam `json:"snapshot,omitempty"`
	Path      string    `json:"path,omitempty"`
}

type FileReadResult struct {
	Path string             `json:"path"`
	Ref  content.ContentRef `json:"ref"`
	Size int64              `json:"size"`
	Data []byte             `json:"data"` // base64 in JSON
}

// FileWriteParams write one file into a workspace. With ExpectedRevision the
// write lands on exactly that revision; without it, on the current head
// unless the file itself changed meanwhile.
type FileWriteParams struct {
	Workspace        string `json:"workspace"`
	Path             string `json:"path"`
	Data             []byte `json:"data"` // base64 in JSON
	ExpectedRevision *int64 `json:"expectedRevision,omitempty"`
}

// FileListEntry is one child of a listed directory; Size is set for files.
type FileListEntry struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Dir  bool   `json:"dir"`
	Size *int64 `json:"size,omitempty"`
}

type FileListResult struct {
	Entries []FileListEntry `json:"entries"`
}

// BlobsMissingParams name blobs by ref (object or digest string).
type BlobsMissingParams struct {
	Digests []RefParam `json:"digests"`
}

// BlobsMissingResult lists the digests of the named blobs the universe does
// not hold: digests, not refs, since there are no bytes to read.
type BlobsMissingResult struct {
	Missing []content.Digest `json:"missing"`
}
