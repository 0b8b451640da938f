package vfs

import (
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// Ignore matches manifest paths against gitignore patterns.
type Ignore struct{ m gitignore.Matcher }

// ParseIgnore reads patterns in gitignore syntax (blank lines and lines
// starting with "#" are skipped; "!" re-includes; a trailing "/" matches
// directories only; a pattern with an inner "/" is anchored to the root;
// "**" spans directories). Patterns are relative to the root of the tree
// they are applied to, wherever the file holding them lives.
func ParseIgnore(data []byte) *Ignore {
	var ps []gitignore.Pattern
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, nil))
	}
	return &Ignore{m: gitignore.NewMatcher(ps)}
}

// Match reports whether the file (or, with isDir, directory) at manifest
// path p is ignored. A nil Ignore ignores nothing.
func (ig *Ignore) Match(p string, isDir bool) bool {
	return ig != nil && ig.m.Match(strings.Split(p, "/"), isDir)
}
