package vfs

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
)

// ImportOptions tune ImportDir. The zero value imports everything but git
// metadata, with the default limits.
type ImportOptions struct {
	Limits Limits  // zero means the defaults
	Ignore *Ignore // paths to leave out (see ParseIgnore); nil leaves out none
}

// Why ImportDir left a path out (Skipped.Reason).
const (
	SkipGit         = "git metadata"
	SkipIgnored     = "ignored"
	SkipLinkOutside = "symlink pointing outside the tree"
	SkipLinkSkipped = "symlink pointing at a skipped path"
	SkipLinkDir     = "symlink to a directory"
	SkipLinkOther   = "symlink to a special file"
	SkipLinkBroken  = "symlink with no target"
)

// Skipped is a path ImportDir left out: the topmost one (a skipped directory
// stands for everything below it).
type Skipped struct {
	Path   string // manifest path
	Reason string // one of the Skip* constants
}

// IsGitPath reports whether manifest path p is git metadata: it has a
// ".git" segment (any case, as case-insensitive file systems read it).
// Such a path is never imported nor exported: written into a checkout, it
// would be the repository's own configuration and hooks.
func IsGitPath(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if strings.EqualFold(seg, ".git") {
			return true
		}
	}
	return false
}

// ImportDir snapshots the local directory dir: it stores every regular file
// beneath it, then writes the manifest with its retention edges (see
// WriteManifest). dir itself may be a symlink. Inside it:
//
//   - git metadata (IsGitPath) and paths opt.Ignore matches are left out;
//   - a symlink to a regular file inside the tree is imported as a file
//     holding its target's bytes; any other symlink (pointing outside the
//     tree or at a left-out path, at a directory, at nothing) is left out;
//   - any other non-regular file (device, pipe, socket) is refused with an
//     *UnsupportedFileError, so an import is never silently incomplete.
//
// Every path left out is returned in walk order. Files are read through an
// os.Root, so nothing outside dir is read even if the tree changes during
// the import. Empty directories are not represented. Limits are checked
// from file metadata before any file is read.
func ImportDir(ctx context.Context, blobs blob.Store, edges Edges, dir string, opt ImportOptions) (Manifest, content.ContentRef, []Skipped, error) {
	fail := func(err error) (Manifest, content.ContentRef, []Skipped, error) {
		return Manifest{}, content.ContentRef{}, nil, fmt.Errorf("vfs import %s: %w", dir, err)
	}
	top, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fail(err)
	}
	root, err := os.OpenRoot(top)
	if err != nil {
		return fail(err)
	}
	defer root.Close()
	im := importer{top: top, root: root, opt: opt}
	b := NewBuilder(blobs, opt.Limits)
	err = filepath.WalkDir(top, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(top, full)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		p := filepath.ToSlash(rel)
		if err := ValidPath(p); err != nil {
			return err
		}
		if err := b.limits.checkPath(p); err != nil {
			return err
		}
		if why := im.excluded(p, d.IsDir()); why != "" {
			im.skipped = append(im.skipped, Skipped{Path: p, Reason: why})
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		src := p // what to read: the file itself, or a symlink's resolved target
		switch {
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			var why string
			if src, why = im.linkTarget(full); why != "" {
				im.skipped = append(im.skipped, Skipped{Path: p, Reason: why})
				return nil
			}
		case !d.Type().IsRegular():
			return &UnsupportedFileError{Path: p, Kind: "special file"}
		}
		return im.add(ctx, b, p, src)
	})
	if err != nil {
		return fail(err)
	}
	m, err := b.Manifest()
	if err != nil {
		return fail(err)
	}
	ref, err := WriteManifest(ctx, blobs, edges, m)
	if err != nil {
		return Manifest{}, content.ContentRef{}, nil, err
	}
	return m, ref, im.skipped, nil
}

type importer struct {
	top     string // dir with its symlinks resolved
	root    *os.Root
	opt     ImportOptions
	skipped []Skipped
}

// excluded says why p is left out, or "" to import it.
func (im *importer) excluded(p string, isDir bool) string {
	switch {
	case IsGitPath(p):
		return SkipGit
	case im.opt.Ignore.Match(p, isDir):
		return SkipIgnored
	}
	return ""
}

// linkTarget resolves the symlink at full to the slash path, relative to
// the tree, of the regular file it names; or says why it is left out.
func (im *importer) linkTarget(full string) (string, string) {
	target, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", SkipLinkBroken
	}
	rel, err := filepath.Rel(im.top, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", SkipLinkOutside
	}
	info, err := os.Stat(target)
	switch {
	case err != nil:
		return "", SkipLinkBroken
	case info.IsDir():
		return "", SkipLinkDir
	case !info.Mode().IsRegular():
		return "", SkipLinkOther
	}
	// The target may sit in a skipped directory: ask about every prefix,
	// as the walk did.
	rel = filepath.ToSlash(rel)
	segs := strings.Split(rel, "/")
	for i := range segs {
		if im.excluded(strings.Join(segs[:i+1], "/"), i < len(segs)-1) != "" {
			return "", SkipLinkSkipped
		}
	}
	return rel, ""
}

// add reads the file at src through the root (which refuses to leave the
// tree, even if it changes meanwhile) and adds it to b at p.
func (im *importer) add(ctx context.Context, b *Builder, p, src string) error {
	f, err := im.root.Open(filepath.FromSlash(src))
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return &UnsupportedFileError{Path: p, Kind: "special file"}
	}
	if err := b.check(p, info.Size()); err != nil {
		return err
	}
	// Read at most one byte past the limit: a file growing meanwhile is
	// refused by Add rather than read whole.
	data, err := io.ReadAll(io.LimitReader(f, b.limits.MaxFileBytes+1))
	if err != nil {
		return err
	}
	_, err = b.Add(ctx, p, data) // re-checks the size actually read
	return err
}
