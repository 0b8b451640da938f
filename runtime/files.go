package runtime

import (
	"context"
	"errors"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/vfs"
)

// Files is what linked files need of a universe's store: workspace heads and
// snapshot records, and the retention edges new manifests record.
type Files interface {
	store.Workspaces
	vfs.Edges
}

// sessionFS mounts a session's links over x.Files; nil without links or
// without a workspace store.
func (x *Executor) sessionFS(links []core.Link) *vfs.FS {
	if len(links) == 0 || x.Files == nil {
		return nil
	}
	return &vfs.FS{Blobs: x.Blobs, Edges: x.Files, Heads: heads{x.Files}, Mounts: mounts(links)}
}

func mounts(links []core.Link) []vfs.Mount {
	out := make([]vfs.Mount, len(links))
	for i, l := range links {
		out[i] = vfs.Mount{Path: l.Mount, Workspace: l.Workspace}
		if l.Snapshot != "" {
			// The core admitted only well-formed digests.
			out[i].Snapshot, _ = content.ParseDigest(l.Snapshot)
		}
	}
	return out
}

// heads adapts a workspace store to the heads the VFS moves, turning the
// store's revision conflict into the VFS's.
type heads struct{ ws store.Workspaces }

func (h heads) Head(ctx context.Context, name string) (content.Digest, int64, error) {
	w, err := h.ws.Workspace(ctx, name)
	if err != nil {
		return content.Digest{}, 0, err
	}
	return w.Head, w.Revision, nil
}

func (h heads) MoveHead(ctx context.Context, name string, expected int64, head content.Digest) (int64, error) {
	w, err := h.ws.MoveHead(ctx, name, expected, head)
	if errors.Is(err, store.ErrWorkspaceConflict) {
		return 0, errors.Join(vfs.ErrHeadMoved, err)
	}
	if err != nil {
		return 0, err
	}
	return w.Revision, nil
}
