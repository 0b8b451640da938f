package vfs

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
)

// ImportDir snapshots the local directory dir: it stores every regular file
// beneath it, then writes the manifest with its retention edges (see
// WriteManifest). dir itself may be a symlink; inside it, a symlink or any
// other non-regular file (device, pipe, socket) is refused with an
// *UnsupportedFileError rather than silently left out, so an imported tree is
// never quietly incomplete. Empty directories are not represented. Limits (a
// zero Limits means the defaults) are checked from file metadata before any
// file is read.
func ImportDir(ctx context.Context, blobs blob.Store, edges Edges, dir string, limits Limits) (Manifest, content.ContentRef, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return Manifest{}, content.ContentRef{}, fmt.Errorf("vfs import: %w", err)
	}
	b := NewBuilder(blobs, limits)
	err = filepath.WalkDir(root, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(root, full)
		if err != nil {
			return err
		}
		p := filepath.ToSlash(rel)
		if d.IsDir() {
			if p != "." {
				if err := ValidPath(p); err != nil {
					return err
				}
				if err := b.limits.checkPath(p); err != nil {
					return err
				}
			}
			return nil
		}
		if !d.Type().IsRegular() {
			kind := "special file"
			if d.Type()&fs.ModeSymlink != 0 {
				kind = "symlink"
			}
			return &UnsupportedFileError{Path: p, Kind: kind}
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if err := b.check(p, info.Size()); err != nil {
			return err
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return err
		}
		_, err = b.Add(ctx, p, data) // re-checks the size actually read
		return err
	})
	if err != nil {
		return Manifest{}, content.ContentRef{}, fmt.Errorf("vfs import %s: %w", dir, err)
	}
	m, err := b.Manifest()
	if err != nil {
		return Manifest{}, content.ContentRef{}, err
	}
	ref, err := WriteManifest(ctx, blobs, edges, m)
	if err != nil {
		return Manifest{}, content.ContentRef{}, err
	}
	return m, ref, nil
}
