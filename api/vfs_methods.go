package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/vfs"
)

const maxWorkspaceList = 1000

func vfsRoutes() map[string]method {
	return map[string]method{
		MethodWorkspacesCreate: vfsHandler(call.createWorkspace).errs(KindWorkspaceExists, KindNotFound, KindUnsupported, KindMissingBlob),
		MethodWorkspacesList:   vfsHandler(call.listWorkspaces).errs(KindUnsupported),
		MethodWorkspacesRead:   vfsHandler(call.readWorkspace).errs(KindNotFound, KindUnsupported),
		MethodWorkspacesCommit: vfsHandler(call.commitWorkspace).errs(KindLimitExceeded, KindMissingBlob, KindNotFound, "revision_conflict", KindUnsupported),
		MethodSnapshotsCreate:  vfsHandler(call.createSnapshot).errs(KindNotFound, KindUnsupported),
		MethodSnapshotsRead:    vfsHandler(call.readSnapshot).errs(KindNotFound, KindUnsupported),
		MethodFilesRead:        vfsHandler(call.readFile).errs(KindNotFound, KindLimitExceeded, KindUnsupported),
		MethodFilesWrite:       vfsHandler(call.writeFile).errs(KindLimitExceeded, KindNotFound, "revision_conflict", KindUnsupported),
		MethodFilesList:        vfsHandler(call.listFiles).errs(KindNotFound, KindUnsupported),
		MethodBlobsMissing:     handler(call.missingBlobs).errs(KindUnsupported),
	}
}

// vfsHandler is handler with the workspace store's errors made typed: the
// server maps only the session store's.
func vfsHandler[P any, R any](f func(call, context.Context, P) (R, error)) method {
	return handler(func(c call, ctx context.Context, p P) (R, error) {
		r, err := f(c, ctx, p)
		return r, workspaceError(err)
	})
}

func workspaceError(err error) error {
	var conflict *store.WorkspaceConflictError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &conflict):
		return revisionConflict(conflict.Name, conflict.Expected, conflict.Actual)
	case errors.Is(err, store.ErrWorkspaceNotFound), errors.Is(err, store.ErrSnapshotNotFound):
		return newError(CodeDomain, KindNotFound, err.Error())
	case errors.Is(err, store.ErrWorkspaceExists):
		return newError(CodeDomain, KindWorkspaceExists, err.Error())
	case errors.Is(err, store.ErrInvalidWorkspace):
		return invalidParams(err.Error())
	}
	return err
}

func revisionConflict(workspace string, expected, actual int64) error {
	return &core.Rejection{Kind: core.RejectRevisionConflict,
		Message:  fmt.Sprintf("workspace %s is at revision %d, not %d", workspace, actual, expected),
		Expected: &expected, Actual: &actual}
}

// vfsInputError types an error of a vfs function applied to the caller's
// input (paths, entries, bytes). It is not for errors of reading stored
// manifests: a corrupt manifest is the server's fault, not the caller's.
func vfsInputError(err error) error {
	switch {
	case errors.Is(err, vfs.ErrLimit):
		return newError(CodeDomain, KindLimitExceeded, err.Error())
	case errors.Is(err, vfs.ErrNotFound):
		return newError(CodeDomain, KindNotFound, err.Error())
	case errors.Is(err, vfs.ErrInvalidManifest):
		return invalidParams(err.Error())
	}
	return err
}

// files is the universe's workspace store, or a typed refusal without one.
func (s call) files() (runtime.Files, error) {
	f := s.host.Files()
	if f == nil {
		return nil, newError(CodeDomain, KindUnsupported, "this server keeps no workspaces or snapshots")
	}
	return f, nil
}

func checkExpected(rev *int64) error {
	if rev != nil && *rev < 0 {
		return invalidParams("expectedRevision must not be negative")
	}
	return nil
}

// Manifest blobs are stored with vfs.MediaType; the store keeps only digests.
func headOf(d content.Digest) WorkspaceHead {
	return WorkspaceHead{Ref: content.ContentRef{Digest: d, MediaType: vfs.MediaType}}
}

func workspaceResult(w store.Workspace) WorkspaceResult {
	return WorkspaceResult{Workspace: w.Name, Revision: w.Revision, Head: headOf(w.Head)}
}

func (s call) manifest(ctx context.Context, d content.Digest) (vfs.Manifest, error) {
	return vfs.ReadManifest(ctx, s.host.Blobs(), d)
}

func (s call) createWorkspace(ctx context.Context, p WorkspaceCreateParams) (WorkspaceResult, error) {
	files, err := s.files()
	if err != nil {
		return WorkspaceResult{}, err
	}
	if err := store.ValidateWorkspaceName(p.Workspace); err != nil {
		return WorkspaceResult{}, err
	}
	var head content.Digest
	if p.Snapshot != nil {
		if head, err = snapshotDigest("snapshot", p.Snapshot); err != nil {
			return WorkspaceResult{}, err
		}
		if _, err := files.Snapshot(ctx, head); err != nil {
			return WorkspaceResult{}, err
		}
	} else {
		ref, err := vfs.WriteManifest(ctx, s.host.Blobs(), files, vfs.Manifest{Files: []vfs.Entry{}})
		if err != nil {
			return WorkspaceResult{}, err
		}
		head = ref.Digest
	}
	w, err := files.CreateWorkspace(ctx, p.Workspace, head)
	if err != nil {
		return WorkspaceResult{}, err
	}
	return workspaceResult(w), nil
}

func (s call) listWorkspaces(ctx context.Context, p WorkspaceListParams) (WorkspaceListResult, error) {
	files, err := s.files()
	if err != nil {
		return WorkspaceListResult{}, err
	}
	if p.Limit < 0 {
		return WorkspaceListResult{}, invalidParams("limit must not be negative")
	}
	limit := p.Limit
	if limit == 0 || limit > maxWorkspaceList {
		limit = maxWorkspaceList
	}
	list, err := files.Workspaces(ctx, p.After, limit)
	if err != nil {
		return WorkspaceListResult{}, err
	}
	out := WorkspaceListResult{Workspaces: make([]WorkspaceInfo, len(list))}
	for i, w := range list {
		out.Workspaces[i] = WorkspaceInfo{Workspace: w.Name, Revision: w.Revision, Head: headOf(w.Head), CreatedAtMs: w.CreatedAtMs, UpdatedAtMs: w.UpdatedAtMs}
	}
	return out, nil
}

func (s call) readWorkspace(ctx context.Context, p WorkspaceParams) (WorkspaceReadResult, error) {
	files, err := s.files()
	if err != nil {
		return WorkspaceReadResult{}, err
	}
	if err := store.ValidateWorkspaceName(p.Workspace); err != nil {
		return WorkspaceReadResult{}, err
	}
	w, err := files.Workspace(ctx, p.Workspace)
	if err != nil {
		return WorkspaceReadResult{}, err
	}
	m, err := s.manifest(ctx, w.Head)
	if err != nil {
		return WorkspaceReadResult{}, err
	}
	return WorkspaceReadResult{Workspace: w.Name, Revision: w.Revision, Head: headOf(w.Head), Files: m.Totals.Files, Bytes: m.Totals.Bytes}, nil
}

// commitWorkspace replaces a workspace's tree. Everything that can be refused
// (input, revision, missing blobs, wrong sizes) is checked before anything is
// written. Without expectedRevision the tree lands on the current head (or
// creates the workspace), re-read if another writer moves it meanwhile.
func (s call) commitWorkspace(ctx context.Context, p WorkspaceCommitParams) (WorkspaceReadResult, error) {
	files, err := s.files()
	if err != nil {
		return WorkspaceReadResult{}, err
	}
	if err := store.ValidateWorkspaceName(p.Workspace); err != nil {
		return WorkspaceReadResult{}, err
	}
	if err := checkExpected(p.ExpectedRevision); err != nil {
		return WorkspaceReadResult{}, err
	}
	// An absent list is refused so a forgotten field cannot empty a tree.
	if p.Files == nil {
		return WorkspaceReadResult{}, invalidParams("files is required; [] empties the workspace")
	}
	m, err := vfs.NewManifest(p.Files, vfs.Limits{})
	if err != nil {
		return WorkspaceReadResult{}, vfsInputError(err)
	}
	cur, exists, err := s.currentWorkspace(ctx, files, p.Workspace)
	if err != nil {
		return WorkspaceReadResult{}, err
	}
	if want := p.ExpectedRevision; want != nil {
		switch {
		case exists && cur.Revision != *want:
			return WorkspaceReadResult{}, revisionConflict(p.Workspace, *want, cur.Revision)
		case !exists && *want != 0:
			return WorkspaceReadResult{}, newError(CodeDomain, KindNotFound,
				"workspace "+p.Workspace+" not found; omit expectedRevision to create it")
		}
	}
	// The files are admitted by ref: their grace renews until the manifest's
	// edges hold them.
	if err := s.admit(ctx, vfs.FileDigests(m)); err != nil {
		return WorkspaceReadResult{}, err
	}
	if err := s.checkSizes(ctx, m, cur, exists); err != nil {
		return WorkspaceReadResult{}, err
	}
	ref, err := vfs.WriteManifest(ctx, s.host.Blobs(), files, m)
	if err != nil {
		return WorkspaceReadResult{}, err
	}
	for attempt := 1; ; attempt++ {
		var w store.Workspace
		if exists {
			w, err = files.MoveHead(ctx, p.Workspace, cur.Revision, ref.Digest)
		} else {
			w, err = files.CreateWorkspace(ctx, p.Workspace, ref.Digest)
		}
		if err == nil {
			return WorkspaceReadResult{Workspace: w.Name, Revision: w.Revision, Head: headOf(w.Head), Files: m.Totals.Files, Bytes: m.Totals.Bytes}, nil
		}
		lost := errors.Is(err, store.ErrWorkspaceConflict) || errors.Is(err, store.ErrWorkspaceExists)
		if !lost {
			return WorkspaceReadResult{}, err
		}
		// Another writer moved (or created) the workspace since it was read.
		base := cur.Revision
		if cur, exists, err = s.currentWorkspace(ctx, files, p.Workspace); err != nil {
			return WorkspaceReadResult{}, err
		}
		if p.ExpectedRevision != nil || attempt == vfs.MaxWriteAttempts {
			return WorkspaceReadResult{}, revisionConflict(p.Workspace, base, cur.Revision)
		}
	}
}

// currentWorkspace reads a workspace; exists is false when there is none.
func (s call) currentWorkspace(ctx context.Context, files runtime.Files, name string) (store.Workspace, bool, error) {
	w, err := files.Workspace(ctx, name)
	if errors.Is(err, store.ErrWorkspaceNotFound) {
		return store.Workspace{}, false, nil
	}
	return w, err == nil, err
}

// checkSizes refuses an entry whose size is not its blob's: limits, totals
// and exports all trust the sizes a manifest declares. A blob the current
// head already names with that size was checked when it was written; any
// other is read once.
func (s call) checkSizes(ctx context.Context, m vfs.Manifest, cur store.Workspace, exists bool) error {
	sizes := map[content.Digest]int64{}
	if exists {
		head, err := s.manifest(ctx, cur.Head)
		if err != nil {
			return err
		}
		for _, e := range head.Files {
			sizes[e.Ref.Digest] = e.Size
		}
	}
	for _, e := range m.Files {
		size, ok := sizes[e.Ref.Digest]
		if !ok || size != e.Size {
			data, err := s.host.Blobs().Get(ctx, e.Ref.Digest)
			if err != nil {
				return err
			}
			size = int64(len(data))
			sizes[e.Ref.Digest] = size
		}
		if size != e.Size {
			return invalidParams(fmt.Sprintf("files: %s declares size %d, but its ref %s holds %d bytes", e.Path, e.Size, e.Ref.Digest, size))
		}
	}
	return nil
}

func (s call) createSnapshot(ctx context.Context, p WorkspaceParams) (SnapshotCreateResult, error) {
	files, err := s.files()
	if err != nil {
		return SnapshotCreateResult{}, err
	}
	if err := store.ValidateWorkspaceName(p.Workspace); err != nil {
		return SnapshotCreateResult{}, err
	}
	w, err := files.Workspace(ctx, p.Workspace)
	if err != nil {
		return SnapshotCreateResult{}, err
	}
	m, err := s.manifest(ctx, w.Head)
	if err != nil {
		return SnapshotCreateResult{}, err
	}
	if _, err := files.PutSnapshot(ctx, w.Head); err != nil {
		return SnapshotCreateResult{}, err
	}
	return SnapshotCreateResult{Snapshot: snapshotRef(w.Head), Files: m.Totals.Files, Bytes: m.Totals.Bytes}, nil
}

func (s call) readSnapshot(ctx context.Context, p SnapshotParams) (SnapshotReadResult, error) {
	files, err := s.files()
	if err != nil {
		return SnapshotReadResult{}, err
	}
	d, err := snapshotDigest("snapshot", &p.Snapshot)
	if err != nil {
		return SnapshotReadResult{}, err
	}
	if _, err := files.Snapshot(ctx, d); err != nil {
		return SnapshotReadResult{}, err
	}
	m, err := s.manifest(ctx, d)
	if err != nil {
		return SnapshotReadResult{}, err
	}
	return SnapshotReadResult{Snapshot: snapshotRef(d), Files: m.Files, FileCount: m.Totals.Files, Bytes: m.Totals.Bytes}, nil
}

// tree loads the manifest p names: a workspace's head or a recorded snapshot.
func (s call) tree(ctx context.Context, p FileParams) (vfs.Manifest, error) {
	files, err := s.files()
	if err != nil {
		return vfs.Manifest{}, err
	}
	if (p.Workspace == "") == (p.Snapshot == nil) {
		return vfs.Manifest{}, invalidParams("name exactly one of workspace and snapshot")
	}
	var d content.Digest
	if p.Workspace != "" {
		if err := store.ValidateWorkspaceName(p.Workspace); err != nil {
			return vfs.Manifest{}, err
		}
		w, err := files.Workspace(ctx, p.Workspace)
		if err != nil {
			return vfs.Manifest{}, err
		}
		d = w.Head
	} else {
		if d, err = snapshotDigest("snapshot", p.Snapshot); err != nil {
			return vfs.Manifest{}, err
		}
		if _, err := files.Snapshot(ctx, d); err != nil {
			return vfs.Manifest{}, err
		}
	}
	return s.manifest(ctx, d)
}

func (s call) readFile(ctx context.Context, p FileParams) (FileReadResult, error) {
	path, err := vfs.CleanPath(p.Path)
	if err != nil {
		return FileReadResult{}, invalidParams(err.Error())
	}
	m, err := s.tree(ctx, p)
	if err != nil {
		return FileReadResult{}, err
	}
	e, ok := vfs.Lookup(m, path)
	if !ok {
		return FileReadResult{}, newError(CodeDomain, KindNotFound, "no file at "+path)
	}
	data, err := s.host.Blobs().Get(ctx, e.Ref.Digest)
	if err != nil {
		return FileReadResult{}, err
	}
	return FileReadResult{Path: e.Path, Ref: e.Ref, Size: e.Size, Data: data}, nil
}

func (s call) listFiles(ctx context.Context, p FileParams) (FileListResult, error) {
	m, err := s.tree(ctx, p)
	if err != nil {
		return FileListResult{}, err
	}
	kids, err := vfs.List(m, p.Path)
	if err != nil {
		return FileListResult{}, vfsInputError(err)
	}
	out := FileListResult{Entries: make([]FileListEntry, len(kids))}
	for i, k := range kids {
		out.Entries[i] = FileListEntry{Name: k.Name, Path: k.Path, Dir: k.IsDir}
		if !k.IsDir {
			size := k.Entry.Size
			out.Entries[i].Size = &size
		}
	}
	return out, nil
}

// writeFile writes one file onto a workspace's head. With expectedRevision it
// is one attempt on that revision. Without, a head moved by another writer is
// re-read and the write retried, as the vfs_write_file tool does, unless the
// file itself changed there: another writer's version is never replaced.
func (s call) writeFile(ctx context.Context, p FileWriteParams) (WorkspaceResult, error) {
	files, err := s.files()
	if err != nil {
		return WorkspaceResult{}, err
	}
	if err := store.ValidateWorkspaceName(p.Workspace); err != nil {
		return WorkspaceResult{}, err
	}
	if err := checkExpected(p.ExpectedRevision); err != nil {
		return WorkspaceResult{}, err
	}
	path, err := vfs.CleanPath(p.Path)
	if err != nil {
		return WorkspaceResult{}, invalidParams(err.Error())
	}
	var base vfs.Entry // the file as first read; zero if absent
	var baseRev int64
	for attempt := range vfs.MaxWriteAttempts {
		w, err := files.Workspace(ctx, p.Workspace)
		if err != nil {
			return WorkspaceResult{}, err
		}
		if p.ExpectedRevision != nil && w.Revision != *p.ExpectedRevision {
			return WorkspaceResult{}, revisionConflict(p.Workspace, *p.ExpectedRevision, w.Revision)
		}
		m, err := s.manifest(ctx, w.Head)
		if err != nil {
			return WorkspaceResult{}, err
		}
		cur, _ := vfs.Lookup(m, path)
		if attempt == 0 {
			base, baseRev = cur, w.Revision
		} else if cur != base {
			return WorkspaceResult{}, revisionConflict(p.Workspace, baseRev, w.Revision)
		}
		next, _, err := vfs.Edit(ctx, s.host.Blobs(), m, path, p.Data, vfs.Limits{})
		if err != nil {
			return WorkspaceResult{}, vfsInputError(err)
		}
		ref, err := vfs.WriteManifest(ctx, s.host.Blobs(), files, next)
		if err != nil {
			return WorkspaceResult{}, err
		}
		moved, err := files.MoveHead(ctx, p.Workspace, w.Revision, ref.Digest)
		if errors.Is(err, store.ErrWorkspaceConflict) && p.ExpectedRevision == nil {
			continue
		}
		if err != nil {
			return WorkspaceResult{}, err
		}
		return workspaceResult(moved), nil
	}
	return WorkspaceResult{}, &core.Rejection{Kind: core.RejectRevisionConflict,
		Message: fmt.Sprintf("workspace %s kept moving during %d attempts to write %s; try again", p.Workspace, vfs.MaxWriteAttempts, path)}
}

func (s call) missingBlobs(ctx context.Context, p BlobsMissingParams) (BlobsMissingResult, error) {
	if len(p.Digests) > MaxBlobsMissing {
		return BlobsMissingResult{}, invalidParams(fmt.Sprintf("at most %d digests per call, got %d", MaxBlobsMissing, len(p.Digests)))
	}
	digests := make([]content.Digest, len(p.Digests))
	for i, r := range p.Digests {
		if r.IsZero() {
			return BlobsMissingResult{}, invalidParams(fmt.Sprintf("digests[%d] is empty", i))
		}
		digests[i] = r.Digest
	}
	// A client that skips an upload because the bytes are here is about to
	// reference them: the answer renews their grace like an admission.
	missing, err := s.host.Blobs().Touch(ctx, digests)
	if missing == nil {
		missing = []content.Digest{}
	}
	return BlobsMissingResult{Missing: missing}, err
}
