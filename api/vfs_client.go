package api

import (
	"context"

	"github.com/cairn-agents/cairn/content"
)

// CreateWorkspace calls vfs/workspaces/create.
func (c *Client) CreateWorkspace(ctx context.Context, p WorkspaceCreateParams) (WorkspaceResult, error) {
	var r WorkspaceResult
	return r, c.Call(ctx, MethodWorkspacesCreate, p, &r)
}

// ListWorkspaces calls vfs/workspaces/list.
func (c *Client) ListWorkspaces(ctx context.Context, p WorkspaceListParams) (WorkspaceListResult, error) {
	var r WorkspaceListResult
	return r, c.Call(ctx, MethodWorkspacesList, p, &r)
}

// ReadWorkspace calls vfs/workspaces/read.
func (c *Client) ReadWorkspace(ctx context.Context, workspace string) (WorkspaceReadResult, error) {
	var r WorkspaceReadResult
	return r, c.Call(ctx, MethodWorkspacesRead, WorkspaceParams{Workspace: workspace}, &r)
}

// CommitWorkspace calls vfs/workspaces/commit.
func (c *Client) CommitWorkspace(ctx context.Context, p WorkspaceCommitParams) (WorkspaceReadResult, error) {
	var r WorkspaceReadResult
	return r, c.Call(ctx, MethodWorkspacesCommit, p, &r)
}

// CreateSnapshot calls vfs/snapshots/create.
func (c *Client) CreateSnapshot(ctx context.Context, workspace string) (SnapshotCreateResult, error) {
	var r SnapshotCreateResult
	return r, c.Call(ctx, MethodSnapshotsCreate, WorkspaceParams{Workspace: workspace}, &r)
}

// ReadSnapshot calls vfs/snapshots/read.
func (c *Client) ReadSnapshot(ctx context.Context, snapshot RefParam) (SnapshotReadResult, error) {
	var r SnapshotReadResult
	return r, c.Call(ctx, MethodSnapshotsRead, SnapshotParams{Snapshot: snapshot}, &r)
}

// ReadFile calls vfs/files/read.
func (c *Client) ReadFile(ctx context.Context, p FileParams) (FileReadResult, error) {
	var r FileReadResult
	return r, c.Call(ctx, MethodFilesRead, p, &r)
}

// WriteFile calls vfs/files/write.
func (c *Client) WriteFile(ctx context.Context, p FileWriteParams) (WorkspaceResult, error) {
	var r WorkspaceResult
	return r, c.Call(ctx, MethodFilesWrite, p, &r)
}

// ListFiles calls vfs/files/list.
func (c *Client) ListFiles(ctx context.Context, p FileParams) (FileListResult, error) {
	var r FileListResult
	return r, c.Call(ctx, MethodFilesList, p, &r)
}

// MissingBlobs calls blobs/missing.
func (c *Client) MissingBlobs(ctx context.Context, digests []content.Digest) (BlobsMissingResult, error) {
	var r BlobsMissingResult
	refs := make([]RefParam, len(digests))
	for i, d := range digests {
		refs[i] = DigestRef(d)
	}
	return r, c.Call(ctx, MethodBlobsMissing, BlobsMissingParams{Digests: refs}, &r)
}
