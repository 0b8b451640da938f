package vfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/cairn-agents/cairn/content"
)

// MaxWriteAttempts bounds how often a write re-reads a moved workspace head.
// Each failed attempt means another writer landed, so this many parallel
// writers to one workspace always succeed.
const MaxWriteAttempts = 5

// WriteResult describes a write that moved a workspace head.
type WriteResult struct {
	Path      string             // absolute path written
	Workspace string             // workspace whose head moved
	Revision  int64              // the workspace's revision after the write
	Head      content.ContentRef // the new head manifest
	Entry     Entry              // the file's new manifest entry
}

// errFileChanged tells update that the file moved under a WriteFile.
var errFileChanged = errors.New("file changed")

// WriteFile creates or replaces the file at absolute path p in its
// workspace. If the head moves before the write lands, the write is retried on
// the new head only when that file is unchanged there; otherwise it fails with
// a *ConflictError, so another writer's version is never silently replaced.
func (fs *FS) WriteFile(ctx context.Context, p string, data []byte) (WriteResult, error) {
	var base Entry
	var baseExists bool
	return fs.update(ctx, p, func(attempt int, _ string, cur Entry, exists bool) ([]byte, error) {
		if attempt == 0 {
			base, baseExists = cur, exists
		} else if exists != baseExists || cur != base {
			return nil, errFileChanged
		}
		return data, nil
	})
}

// EditFile replaces the single occurrence of oldText in the file at p with
// newText.
// On a concurrent head move the replacement is re-applied to the latest
// content, so edits of different parts of one file by parallel calls both land.
func (fs *FS) EditFile(ctx context.Context, p, oldText, newText string) (WriteResult, error) {
	if oldText == "" {
		return WriteResult{}, fmt.Errorf("vfs: cannot edit %s: old text is empty; %w", p, ErrEditMatch)
	}
	return fs.update(ctx, p, func(_ int, abs string, cur Entry, exists bool) ([]byte, error) {
		if !exists {
			return nil, &NotFoundError{Path: abs}
		}
		data, err := fs.Blobs.Get(ctx, cur.Ref.Digest)
		if err != nil {
			return nil, &storeError{op: "read " + abs, err: err}
		}
		if n := bytes.Count(data, []byte(oldText)); n != 1 {
			return nil, &EditError{Path: abs, Count: n}
		}
		return bytes.Replace(data, []byte(oldText), []byte(newText), 1), nil
	})
}

// update writes the bytes change returns for the file at p onto its
// workspace's head: read head and revision, build and store the new manifest
// (recording its edges), then move the head if its revision is unchanged. A
// moved head is re-read and change called again with the next attempt number
// and the file's entry there (exists false when absent).
func (fs *FS) update(ctx context.Context, p string, change func(attempt int, abs string, cur Entry, exists bool) ([]byte, error)) (WriteResult, error) {
	pl, err := fs.locate(p)
	if err != nil {
		return WriteResult{}, err
	}
	if pl.mount == nil || pl.rel == "" {
		return WriteResult{}, &WrongKindError{Path: pl.abs, IsDir: true}
	}
	m := *pl.mount
	if m.ReadOnly() {
		return WriteResult{}, &ReadOnlyError{Path: pl.abs, Mount: m.Path}
	}
	if fs.Edges == nil {
		return WriteResult{}, &MountError{Path: m.Path, Reason: "writable mount without FS.Edges"}
	}
	for attempt := range MaxWriteAttempts {
		man, rev, err := fs.load(ctx, m)
		if err != nil {
			return WriteResult{}, err
		}
		if err := checkFileSlot(man, m.Path, pl.rel); err != nil {
			return WriteResult{}, fmt.Errorf("vfs: cannot write %s: %w", pl.abs, err)
		}
		cur, exists := Lookup(man, pl.rel)
		data, err := change(attempt, pl.abs, cur, exists)
		if errors.Is(err, errFileChanged) {
			return WriteResult{}, &ConflictError{Path: pl.abs, Workspace: m.Workspace, FileChanged: true, Attempts: attempt + 1}
		}
		if err != nil {
			return WriteResult{}, err
		}
		next, e, err := Edit(ctx, fs.Blobs, man, pl.rel, data, fs.Limits)
		if err != nil {
			// Edit fails on the caller's input (path, limits) or on storing bytes.
			if errors.Is(err, ErrInvalidManifest) || errors.Is(err, ErrLimit) {
				return WriteResult{}, fmt.Errorf("vfs: cannot write %s: %w", pl.abs, err)
			}
			return WriteResult{}, &storeError{op: "write " + pl.abs, err: err}
		}
		ref, err := WriteManifest(ctx, fs.Blobs, fs.Edges, next)
		if err != nil {
			return WriteResult{}, &storeError{op: "write manifest of " + m.Path, err: err}
		}
		newRev, err := fs.Heads.MoveHead(ctx, m.Workspace, rev, ref.Digest)
		if errors.Is(err, ErrHeadMoved) {
			continue
		}
		if err != nil {
			return WriteResult{}, &storeError{op: fmt.Sprintf("move head of workspace %q", m.Workspace), err: err}
		}
		return WriteResult{Path: pl.abs, Workspace: m.Workspace, Revision: newRev, Head: ref, Entry: e}, nil
	}
	return WriteResult{}, &ConflictError{Path: pl.abs, Workspace: m.Workspace, Attempts: MaxWriteAttempts}
}

// checkFileSlot reports, with absolute paths, why rel cannot hold a file in
// m: it is a directory, or one of its parents is a file. WithFile would refuse
// both too, but with manifest-relative paths the model never sees.
func checkFileSlot(m Manifest, mountPath, rel string) error {
	if isDir(m, rel) {
		return &WrongKindError{Path: joinAbs(mountPath, rel), IsDir: true}
	}
	for i := range len(rel) {
		if rel[i] == '/' {
			if _, ok := Lookup(m, rel[:i]); ok {
				return &WrongKindError{Path: joinAbs(mountPath, rel[:i])}
			}
		}
	}
	return nil
}
