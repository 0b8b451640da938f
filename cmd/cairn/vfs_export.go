package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// exporter writes a tree under a local directory all or nothing, without
// ever following a symlink there.
//
// Every file is first written into a staging directory inside the target
// (same file system, so the install is renames only). The install then
// moves each file into place, moving a file it replaces aside first, and
// journals each step; a failure undoes the journal in reverse, so the
// target is left as it was. All access goes through an os.Root, which
// refuses any path leaving the target even if it changes meanwhile; plan
// additionally refuses a symlink anywhere on a path to be written, so none
// inside the target is followed or replaced either.
type exporter struct {
	dir     string
	root    *os.Root
	made    []string // directories above and including dir made by open, deepest first
	stage   string   // staging directory in root: new/ holds new files, old/ replaced ones
	journal []step
	done    bool
}

// step is one journaled install action.
type step struct {
	kind string // "mkdir", "backup", "install"
	path string // slash path in root
}

// beforeInstall runs before each file is moved into place; tests make it
// fail to check the rollback.
var beforeInstall = func(p string) error { return nil }

// openExport opens dir for an export, creating it (and missing parents) if
// absent. Without force it must be absent or empty.
func openExport(dir string, force bool) (*exporter, error) {
	x := &exporter{dir: dir}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, fs.ErrNotExist) || d == filepath.Dir(d) {
			break
		}
		x.made = append(x.made, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if !force {
		if err := requireEmpty(dir); err != nil {
			x.removeMade()
			return nil, err
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		x.removeMade()
		return nil, err
	}
	x.root = root
	var b [8]byte
	_, _ = rand.Read(b[:])
	x.stage = ".cairn-export-" + hex.EncodeToString(b[:])
	if err := root.Mkdir(x.stage, 0o700); err != nil {
		_ = root.Close() // not abort: the name may be someone else's
		x.removeMade()
		return nil, err
	}
	return x, nil
}

func requireEmpty(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("%s is not empty; use --force to write into it", dir)
	}
	return nil
}

// kind describes what is at p in the target: "" when nothing is.
func (x *exporter) kind(p string) (string, error) {
	info, err := x.root.Lstat(filepath.FromSlash(p))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", err
	case info.Mode()&fs.ModeSymlink != 0:
		return "symlink", nil
	case info.IsDir():
		return "dir", nil
	case info.Mode().IsRegular():
		return "file", nil
	}
	return "special file", nil
}

// plan refuses, before anything is fetched or written, a path whose
// parents are not all directories (or absent) or whose place holds anything
// but a regular file (or nothing): a symlink is never written through nor
// replaced.
func (x *exporter) plan(paths []string) error {
	seen := map[string]string{}
	kindOf := func(p string) (string, error) {
		if k, ok := seen[p]; ok {
			return k, nil
		}
		k, err := x.kind(p)
		seen[p] = k
		return k, err
	}
	for _, p := range paths {
		segs := strings.Split(p, "/")
	prefixes:
		for i := 1; i <= len(segs); i++ {
			q := strings.Join(segs[:i], "/")
			k, err := kindOf(q)
			if err != nil {
				return err
			}
			leaf := i == len(segs)
			switch {
			case k == "":
			case k == "dir" && !leaf, k == "file" && leaf:
				continue
			case k == "symlink":
				return fmt.Errorf("%s is a symlink; export never writes through or replaces one", filepath.Join(x.dir, q))
			case leaf:
				return fmt.Errorf("%s is a %s; the tree has a file there", filepath.Join(x.dir, q), k)
			default:
				return fmt.Errorf("%s is a %s; the tree has a directory there", filepath.Join(x.dir, q), k)
			}
			break prefixes // absent: so is everything below it
		}
	}
	return nil
}

// write stages p's bytes.
func (x *exporter) write(p string, data []byte) error {
	name := filepath.Join(x.stage, "new", filepath.FromSlash(p))
	if err := x.root.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return err
	}
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// install moves every staged file into place, in order; on failure it
// undoes what it did and returns the error.
func (x *exporter) install(paths []string) error {
	for _, p := range paths {
		if err := x.installOne(p); err != nil {
			return fmt.Errorf("installing %s: %w", p, err)
		}
	}
	x.done = true
	return nil
}

func (x *exporter) installOne(p string) error {
	segs := strings.Split(p, "/")
	for i := 1; i < len(segs); i++ {
		q := strings.Join(segs[:i], "/")
		switch k, err := x.kind(q); {
		case err != nil:
			return err
		case k == "":
			if err := x.root.Mkdir(filepath.FromSlash(q), 0o755); err != nil {
				return err
			}
			x.journal = append(x.journal, step{"mkdir", q})
		case k != "dir":
			return fmt.Errorf("%s became a %s during the export", q, k)
		}
	}
	if err := beforeInstall(p); err != nil {
		return err
	}
	staged := filepath.Join(x.stage, "new", filepath.FromSlash(p))
	switch k, err := x.kind(p); {
	case err != nil:
		return err
	case k == "file":
		if info, err := x.root.Lstat(filepath.FromSlash(p)); err == nil {
			_ = x.root.Chmod(staged, info.Mode().Perm()) // a replaced file keeps its mode
		}
		old := filepath.Join(x.stage, "old", filepath.FromSlash(p))
		if err := x.root.MkdirAll(filepath.Dir(old), 0o700); err != nil {
			return err
		}
		if err := x.root.Rename(filepath.FromSlash(p), old); err != nil {
			return err
		}
		x.journal = append(x.journal, step{"backup", p})
	case k != "":
		return fmt.Errorf("%s became a %s during the export", p, k)
	}
	if err := x.root.Rename(staged, filepath.FromSlash(p)); err != nil {
		return err
	}
	x.journal = append(x.journal, step{"install", p})
	return nil
}

// abort undoes an unfinished export: installed files go, replaced ones come
// back, directories it made are removed. It is a no-op after install
// succeeded, apart from removing the staging directory.
func (x *exporter) abort() {
	if !x.done {
		for i := len(x.journal) - 1; i >= 0; i-- {
			s := x.journal[i]
			p := filepath.FromSlash(s.path)
			switch s.kind {
			case "install":
				_ = x.root.Remove(p)
			case "backup":
				_ = x.root.Rename(filepath.Join(x.stage, "old", p), p)
			case "mkdir":
				_ = x.root.Remove(p)
			}
		}
	}
	if x.root != nil {
		_ = x.root.RemoveAll(x.stage)
		_ = x.root.Close()
	}
	if !x.done {
		x.removeMade()
	}
}

// removeMade removes the directories openExport made, if still empty.
func (x *exporter) removeMade() {
	for _, d := range x.made {
		_ = os.Remove(d)
	}
}

// gitTop is the topmost ".git" segment's path in p, which export reports
// once for all the files below it.
func gitTop(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if strings.EqualFold(s, ".git") {
			return path.Join(segs[:i+1]...)
		}
	}
	return p
}
