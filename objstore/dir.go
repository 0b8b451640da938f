package objstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Dir stores each object as a file under a root directory, the key's slash
// path becoming its relative file path. Writes are atomic: readers see the
// whole old body or the whole new one, never a partial file.
type Dir struct {
	root string
}

var _ Store = (*Dir)(nil)

// NewDir returns a Dir rooted at root, creating the directory if needed.
func NewDir(root string) (*Dir, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("objstore: root %q: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o750); err != nil {
		return nil, fmt.Errorf("objstore: create root: %w", err)
	}
	return &Dir{root: abs}, nil
}

// Root returns the absolute directory objects are kept in.
func (d *Dir) Root() string { return d.root }

func (d *Dir) path(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put writes data to a temporary file beside the final one, syncs it, and
// renames it into place, then syncs the directory so the rename survives a
// crash. A crash part-way leaves only a ".tmp-" file, never a torn object.
func (d *Dir) Put(ctx context.Context, key string, data []byte) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := d.path(key)
	if err != nil {
		return err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("objstore: put %q: %w", key, err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("objstore: put %q: %w", key, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("objstore: put %q: write: %w", key, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("objstore: put %q: sync: %w", key, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("objstore: put %q: close: %w", key, err)
	}
	if err = os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("objstore: put %q: rename: %w", key, err)
	}
	if err = syncDir(dir); err != nil {
		return fmt.Errorf("objstore: put %q: sync dir: %w", key, err)
	}
	return nil
}

// Get reads the whole object.
func (d *Dir) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil && notObject(err, p) {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	if err != nil {
		return nil, fmt.Errorf("objstore: get %q: %w", key, err)
	}
	return data, nil
}

// Delete removes the object; an absent key is not an error. Emptied parent
// directories are left in place: they are cheap and removing them would race
// with a concurrent Put into the same directory.
func (d *Dir) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if isDir(p) {
		// Not an object (see notObject); os.Remove would delete an empty
		// directory under a concurrent Put's feet.
		return nil
	}
	if err := os.Remove(p); err != nil && !notObject(err, p) {
		return fmt.Errorf("objstore: delete %q: %w", key, err)
	}
	return nil
}

// notObject reports whether err from opening p means the key holds no
// object: p is missing, is a directory (the leading path of other keys), or
// lies below a file (the key extends another key).
func notObject(err error, p string) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || isDir(p)
}

func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
