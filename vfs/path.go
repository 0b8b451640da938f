package vfs

import (
	"path"
	"strings"
	"unicode/utf8"
)

// ValidPath checks that p is a manifest path: non-empty, valid UTF-8, relative
// ("a/b.md", no leading or trailing "/"), already clean (no empty, "." or ".."
// segments), and free of NUL and backslash. It returns a *PathError otherwise.
func ValidPath(p string) error {
	bad := func(reason string) error { return &PathError{Path: p, Reason: reason} }
	switch {
	case p == "":
		return bad("empty path")
	case !utf8.ValidString(p):
		return bad("not valid UTF-8")
	case strings.ContainsRune(p, 0):
		return bad("contains NUL")
	case strings.ContainsRune(p, '\\'):
		return bad("contains a backslash")
	case strings.HasPrefix(p, "/"):
		return bad("absolute path")
	case strings.HasSuffix(p, "/"):
		return bad("trailing slash")
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "":
			return bad("empty segment")
		case ".", "..":
			return bad("segment " + seg)
		}
	}
	return nil
}

// CleanPath turns a user-supplied path ("/a//b/./c.md", "./x") into a manifest
// path ("a/b/c.md", "x"). A path that climbs above the root with ".." or names
// the root itself is refused with a *PathError.
func CleanPath(p string) (string, error) {
	c := path.Clean("/" + p)
	// Cleaning a rooted path drops leading ".."; refuse them instead.
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", &PathError{Path: p, Reason: "contains .."}
		}
	}
	c = strings.TrimPrefix(c, "/")
	if c == "" {
		return "", &PathError{Path: p, Reason: "names the root"}
	}
	return c, ValidPath(c)
}

// cleanDir is CleanPath for a directory argument, where "", "." and "/" mean the root ("").
func cleanDir(dir string) (string, error) {
	if c := path.Clean("/" + dir); c == "/" {
		return "", nil
	}
	return CleanPath(dir)
}

func depth(p string) int { return strings.Count(p, "/") + 1 }
