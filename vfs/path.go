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

// cleanDir checks a directory argument: "", "." and "/" mean the root
// (""); anything else must be a clean manifest path, with an optional
// leading and trailing "/". It does not clean: a path that cleaning would
// change ("a//b", "./a", "a/..") names nothing, and ".." would climb out.
func cleanDir(dir string) (string, error) {
	switch dir {
	case "", ".", "/":
		return "", nil
	}
	d := strings.TrimPrefix(dir, "/")
	if len(d) > 1 {
		d = strings.TrimSuffix(d, "/")
	}
	if err := ValidPath(d); err != nil {
		reason := err.Error()
		if pe, ok := err.(*PathError); ok {
			reason = pe.Reason
		}
		return "", &PathError{Path: dir, Reason: reason + "; name a clean path inside the tree"}
	}
	return d, nil
}

func depth(p string) int { return strings.Count(p, "/") + 1 }
