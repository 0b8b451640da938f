package vfs

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
)

// Mount places one workspace (resolved to its current head at each operation)
// or one pinned snapshot (read-only) at an absolute mount path like "/work".
// A mount at "/" makes that tree the whole session file system (it is then
// the only mount). Exactly one of Workspace and Snapshot is set.
type Mount struct {
	Path      string
	Workspace string
	Snapshot  content.Digest // manifest digest
}

// ReadOnly reports whether m is a pinned snapshot.
func (m Mount) ReadOnly() bool { return m.Workspace == "" }

// Heads reads and moves workspace heads. Implementations map their
// revision-conflict error to one matching ErrHeadMoved. A zero head digest
// means the workspace is an empty tree.
type Heads interface {
	Head(ctx context.Context, workspace string) (head content.Digest, revision int64, err error)
	MoveHead(ctx context.Context, workspace string, expectedRevision int64, head content.Digest) (revision int64, err error)
}

// FS is a session's file tree: absolute paths resolve through Mounts, which
// may not be nested. Limits (zero means the defaults) bound written
// manifests. An FS holds no state of its own, so concurrent calls are safe
// when Blobs, Edges and Heads are.
type FS struct {
	Blobs  blob.Store
	Edges  Edges
	Heads  Heads
	Mounts []Mount
	Limits Limits
}

// FileInfo is a file or directory of the session tree.
type FileInfo struct {
	Path  string // absolute
	Name  string // last segment
	IsDir bool
	Entry Entry // the file's manifest entry (its Path is manifest-relative); zero for a directory
}

// cleanAbs checks that p is an absolute, clean session path and returns it
// without a trailing slash (one is tolerated, since directories are often
// written that way).
func cleanAbs(p string) (string, error) {
	bad := func(reason string) (string, error) { return "", &AbsPathError{Path: p, Reason: reason} }
	switch {
	case p == "":
		return bad("empty path")
	case !strings.HasPrefix(p, "/"):
		return bad(`relative path; paths are absolute, such as "/work/file.txt"`)
	case !utf8.ValidString(p):
		return bad("not valid UTF-8")
	case strings.ContainsRune(p, 0):
		return bad("contains NUL")
	case strings.ContainsRune(p, '\\'):
		return bad("contains a backslash; use / to separate segments")
	}
	q := p
	if len(q) > 1 {
		q = strings.TrimSuffix(q, "/")
	}
	if slices.Contains(strings.Split(q, "/"), "..") {
		return bad(`contains ".."; paths may not climb out of a directory`)
	}
	if c := path.Clean(q); c != q {
		return bad(fmt.Sprintf("not clean; write %q", c))
	}
	return q, nil
}

// under reports whether p lies strictly below directory dir.
func under(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}

func joinAbs(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// checkMounts validates the mount table. It runs per operation because FS is
// a plain struct; a handful of mounts makes that cheap.
func (fs *FS) checkMounts() error {
	for i, m := range fs.Mounts {
		if c, err := cleanAbs(m.Path); err != nil || c != m.Path {
			return &MountError{Path: m.Path, Reason: "not an absolute clean path"}
		}
		if (m.Workspace == "") == m.Snapshot.IsZero() {
			return &MountError{Path: m.Path, Reason: "must name exactly one of a workspace and a snapshot"}
		}
		if !m.ReadOnly() && fs.Heads == nil {
			return &MountError{Path: m.Path, Reason: "workspace mount without FS.Heads"}
		}
		for _, o := range fs.Mounts[:i] {
			if o.Path == m.Path || under(o.Path, m.Path) || under(m.Path, o.Path) {
				return &MountError{Path: m.Path, Reason: fmt.Sprintf("overlaps mount %q", o.Path)}
			}
		}
	}
	return nil
}

// place is where a session path lands.
type place struct {
	abs   string
	mount *Mount // nil for "/" and other directories above the mounts
	rel   string // manifest path inside mount; "" for the mount point itself
}

// locate resolves a session path to its mount and manifest path.
func (fs *FS) locate(p string) (place, error) {
	abs, err := cleanAbs(p)
	if err != nil {
		return place{}, err
	}
	if err := fs.checkMounts(); err != nil {
		return place{}, err
	}
	above := abs == "/"
	for i := range fs.Mounts {
		m := &fs.Mounts[i]
		switch {
		case abs == m.Path:
			return place{abs: abs, mount: m}, nil
		case under(abs, m.Path):
			// cleanAbs already made the remainder a valid manifest path.
			return place{abs: abs, mount: m, rel: strings.TrimPrefix(abs[len(m.Path):], "/")}, nil
		case under(m.Path, abs):
			above = true
		}
	}
	if !above {
		return place{}, &NoMountError{Path: abs, Mounts: fs.mountPaths()}
	}
	return place{abs: abs}, nil
}

func (fs *FS) mountPaths() []string {
	ps := make([]string, len(fs.Mounts))
	for i, m := range fs.Mounts {
		ps[i] = m.Path
	}
	slices.Sort(ps)
	return ps
}

// load reads the manifest a mount shows now, and the workspace revision it
// was read at (0 for a snapshot).
func (fs *FS) load(ctx context.Context, m Mount) (Manifest, int64, error) {
	d, rev := m.Snapshot, int64(0)
	if !m.ReadOnly() {
		var err error
		d, rev, err = fs.Heads.Head(ctx, m.Workspace)
		if err != nil {
			return Manifest{}, 0, &storeError{op: fmt.Sprintf("read head of workspace %q", m.Workspace), err: err}
		}
		if d.IsZero() {
			return Manifest{Files: []Entry{}}, rev, nil
		}
	}
	man, err := ReadManifest(ctx, fs.Blobs, d)
	if err != nil {
		return Manifest{}, 0, &storeError{op: "load mount " + m.Path, err: err}
	}
	return man, rev, nil
}

// isDir reports whether manifest path dir has files below it.
func isDir(m Manifest, dir string) bool {
	i, _ := find(m, dir+"/")
	return i < len(m.Files) && strings.HasPrefix(m.Files[i].Path, dir+"/")
}

// ReadFile returns the bytes and manifest entry of the file at absolute path p.
func (fs *FS) ReadFile(ctx context.Context, p string) ([]byte, Entry, error) {
	pl, err := fs.locate(p)
	if err != nil {
		return nil, Entry{}, err
	}
	if pl.mount == nil || pl.rel == "" {
		return nil, Entry{}, &WrongKindError{Path: pl.abs, IsDir: true}
	}
	man, _, err := fs.load(ctx, *pl.mount)
	if err != nil {
		return nil, Entry{}, err
	}
	e, ok := Lookup(man, pl.rel)
	if !ok {
		if isDir(man, pl.rel) {
			return nil, Entry{}, &WrongKindError{Path: pl.abs, IsDir: true}
		}
		return nil, Entry{}, &NotFoundError{Path: pl.abs}
	}
	data, err := fs.Blobs.Get(ctx, e.Ref.Digest)
	if err != nil {
		return nil, Entry{}, &storeError{op: "read " + pl.abs, err: err}
	}
	return data, e, nil
}

// List returns the immediate children of directory dir, sorted by name.
// Directories above the mounts (such as "/") list the mount points, or the
// directories leading to them, as directories.
func (fs *FS) List(ctx context.Context, dir string) ([]FileInfo, error) {
	pl, err := fs.locate(dir)
	if err != nil {
		return nil, err
	}
	if pl.mount == nil {
		var out []FileInfo
		for _, m := range fs.Mounts {
			if !under(m.Path, pl.abs) {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimPrefix(m.Path[len(pl.abs):], "/"), "/")
			if !slices.ContainsFunc(out, func(f FileInfo) bool { return f.Name == name }) {
				out = append(out, FileInfo{Path: joinAbs(pl.abs, name), Name: name, IsDir: true})
			}
		}
		slices.SortFunc(out, func(a, b FileInfo) int { return strings.Compare(a.Name, b.Name) })
		return out, nil
	}
	man, _, err := fs.load(ctx, *pl.mount)
	if err != nil {
		return nil, err
	}
	if _, ok := Lookup(man, pl.rel); ok {
		return nil, &WrongKindError{Path: pl.abs}
	}
	kids, err := List(man, pl.rel)
	if errors.Is(err, ErrNotFound) {
		return nil, &NotFoundError{Path: pl.abs}
	}
	if err != nil {
		return nil, err
	}
	out := make([]FileInfo, len(kids))
	for i, k := range kids {
		out[i] = FileInfo{Path: joinAbs(pl.abs, k.Name), Name: k.Name, IsDir: k.IsDir, Entry: k.Entry}
	}
	return out, nil
}

// Walk returns every file at or below p (a file or a directory), sorted by
// absolute path. A path inside a mount where nothing exists is a
// *NotFoundError; an empty mount walks as empty.
func (fs *FS) Walk(ctx context.Context, p string) ([]FileInfo, error) {
	pl, err := fs.locate(p)
	if err != nil {
		return nil, err
	}
	mounts := []Mount{}
	if pl.mount != nil {
		mounts = append(mounts, *pl.mount)
	} else {
		for _, m := range fs.Mounts {
			if under(m.Path, pl.abs) {
				mounts = append(mounts, m)
			}
		}
	}
	var out []FileInfo
	for _, m := range mounts {
		man, _, err := fs.load(ctx, m)
		if err != nil {
			return nil, err
		}
		for _, e := range man.Files {
			if pl.rel == "" || e.Path == pl.rel || hasDirPrefix(e.Path, pl.rel) {
				out = append(out, FileInfo{Path: joinAbs(m.Path, e.Path), Name: path.Base(e.Path), Entry: e})
			}
		}
	}
	if pl.rel != "" && len(out) == 0 {
		return nil, &NotFoundError{Path: pl.abs}
	}
	slices.SortFunc(out, func(a, b FileInfo) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// Glob returns the absolute paths of files matching the absolute pattern,
// sorted, across all mounts. Segments match as in Glob ("*", "?", "[...]"
// within one segment; "**" for zero or more segments). A pattern whose
// leading directories exist nowhere matches nothing.
func (fs *FS) Glob(ctx context.Context, pattern string) ([]string, error) {
	if !strings.HasPrefix(pattern, "/") {
		return nil, &AbsPathError{Path: pattern, Reason: `glob pattern is not absolute; start it with "/"`}
	}
	segs := strings.Split(pattern[1:], "/")
	for _, s := range segs {
		if s == ".." {
			return nil, &AbsPathError{Path: pattern, Reason: `glob pattern contains ".."`}
		}
		if _, err := path.Match(s, ""); err != nil {
			return nil, fmt.Errorf("vfs: glob pattern %q: %w", pattern, err)
		}
	}
	// Walk only below the literal leading directories, so "/work/**" does
	// not load every other mount's manifest.
	base := "/"
	for _, s := range segs[:len(segs)-1] {
		if s == "" || s == "." || strings.ContainsAny(s, `*?[\`) {
			break
		}
		base = joinAbs(base, s)
	}
	files, err := fs.Walk(ctx, base)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		if matchSegs(segs, strings.Split(f.Path[1:], "/")) {
			out = append(out, f.Path)
		}
	}
	return out, nil
}
