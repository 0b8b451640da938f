package vfs

import (
	"path"
	"slices"
	"strings"
)

// Lookup returns the entry at manifest path p.
func Lookup(m Manifest, p string) (Entry, bool) {
	i, ok := find(m, p)
	if !ok {
		return Entry{}, false
	}
	return m.Files[i], true
}

// DirEntry is one immediate child of a directory.
type DirEntry struct {
	Name  string // last segment
	Path  string // manifest path
	IsDir bool
	Entry Entry // the file's entry; zero for a directory
}

// List returns the immediate children (files and subdirectories) of dir,
// sorted by name. "", "." and "/" name the root; any other dir must be
// clean (leading and trailing "/" allowed), else a *PathError.
// A dir that is a file or holds nothing is a *NotFoundError (the root of an
// empty manifest lists as empty).
func List(m Manifest, dir string) ([]DirEntry, error) {
	d, err := cleanDir(dir)
	if err != nil {
		return nil, err
	}
	prefix := ""
	if d != "" {
		prefix = d + "/"
	}
	i, _ := find(m, prefix)
	var out []DirEntry
	seenDir := map[string]bool{}
	for ; i < len(m.Files) && strings.HasPrefix(m.Files[i].Path, prefix); i++ {
		e := m.Files[i]
		rest := e.Path[len(prefix):]
		if name, _, isDir := strings.Cut(rest, "/"); isDir {
			if !seenDir[name] {
				seenDir[name] = true
				out = append(out, DirEntry{Name: name, Path: prefix + name, IsDir: true})
			}
		} else {
			out = append(out, DirEntry{Name: name, Path: e.Path, Entry: e})
		}
	}
	if d != "" && len(out) == 0 {
		return nil, &NotFoundError{Path: d}
	}
	// Files are in path order, which is not name order ("a.txt" < "a/x" but
	// the directory "a" sorts before "a.txt").
	slices.SortFunc(out, func(a, b DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Glob returns the file entries whose paths match pattern, in path order.
// The pattern is split on "/"; each segment matches one path segment with
// path.Match semantics ("*", "?", "[...]" never cross a "/"), and a segment
// that is exactly "**" matches zero or more whole segments. Only files match,
// never directories: "docs/*" lists the files directly in docs, "docs/**" every
// file below it. A leading "/" is ignored. A malformed pattern returns
// path.ErrBadPattern.
func Glob(m Manifest, pattern string) ([]Entry, error) {
	segs := strings.Split(strings.TrimPrefix(pattern, "/"), "/")
	for _, s := range segs {
		if s == "**" {
			continue
		}
		if _, err := path.Match(s, ""); err != nil {
			return nil, err
		}
	}
	var out []Entry
	for _, e := range m.Files {
		if matchSegs(segs, strings.Split(e.Path, "/")) {
			out = append(out, e)
		}
	}
	return out, nil
}

func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			// Collapse runs of "**", then try every split point.
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := 0; i <= len(name); i++ {
				if matchSegs(pat, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
