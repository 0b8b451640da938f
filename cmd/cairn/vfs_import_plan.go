package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/cairn-agents/cairn/vfs"
)

// importPlan is what importing a directory does to a workspace: the tree it
// commits and how that tree differs from the workspace's head. `vfs import`
// commits it and `vfs diff` prints it, so the two never disagree.
type importPlan struct {
	files   []vfs.Entry // the tree to commit
	added   []string    // only in the directory
	changed []string    // in both, other bytes
	kept    []string    // only in the workspace, kept
	removed []string    // only in the workspace, removed (--delete)
}

// unchanged reports whether committing the plan would change nothing.
func (p importPlan) unchanged() bool {
	return len(p.added) == 0 && len(p.changed) == 0 && len(p.removed) == 0
}

// planImport merges the directory's files (local, sorted) into the
// workspace's (remote, sorted). A file only in the workspace is what an
// agent or another user wrote there: it is kept unless del, and always kept
// when the import left its path out (ignored, git metadata, a skipped
// link), as the directory says nothing about it. A kept file that clashes
// with a directory's file (one is the other's parent) cannot be kept; the
// plan refuses rather than drop it.
func planImport(local, remote []vfs.Entry, skipped []vfs.Skipped, del bool) (importPlan, error) {
	var p importPlan
	localFiles := map[string]bool{}
	localDirs := map[string]bool{}
	for _, e := range local {
		localFiles[e.Path] = true
		for d := range parents(e.Path) {
			localDirs[d] = true
		}
	}
	i, j := 0, 0
	for i < len(local) || j < len(remote) {
		switch {
		case j == len(remote) || i < len(local) && local[i].Path < remote[j].Path:
			p.files = append(p.files, local[i])
			p.added = append(p.added, local[i].Path)
			i++
		case i == len(local) || remote[j].Path < local[i].Path:
			r := remote[j]
			j++
			if del && !leftOut(r.Path, skipped) {
				p.removed = append(p.removed, r.Path)
				continue
			}
			if clash := clashWith(r.Path, localFiles, localDirs); clash != "" {
				return importPlan{}, fmt.Errorf("the workspace's %s cannot be kept next to the directory's %s (one is a file inside the other): import with --delete to replace it", r.Path, clash)
			}
			p.files = append(p.files, r)
			p.kept = append(p.kept, r.Path)
		default:
			if local[i].Ref.Digest != remote[j].Ref.Digest {
				p.changed = append(p.changed, local[i].Path)
			}
			p.files = append(p.files, local[i])
			i++
			j++
		}
	}
	return p, nil
}

// parents yields each directory above path p ("a/b/c" yields "a", "a/b").
func parents(p string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := 0; k < len(p); k++ {
			if p[k] == '/' && !yield(p[:k]) {
				return
			}
		}
	}
}

// clashWith names the directory's path that workspace file p cannot sit
// beside: p's own path is a directory there, or one of p's parents is a file.
func clashWith(p string, files, dirs map[string]bool) string {
	if dirs[p] {
		return p + "/"
	}
	for d := range parents(p) {
		if files[d] {
			return d
		}
	}
	return ""
}

// leftOut reports whether the import skipped p or a directory above it.
func leftOut(p string, skipped []vfs.Skipped) bool {
	for _, s := range skipped {
		if p == s.Path || strings.HasPrefix(p, s.Path+"/") {
			return true
		}
	}
	return false
}

// maxListed bounds how many paths a summary names before it only counts.
const maxListed = 20

// reportKeptAndRemoved says which workspace files an import kept or removed,
// so a re-import never drops an agent's work without a word.
func reportKeptAndRemoved(out io.Writer, p importPlan) {
	if len(p.kept) > 0 {
		fmt.Fprintf(out, "kept %d files only in the workspace (import with --delete to remove them):\n", len(p.kept))
		listPaths(out, p.kept)
	}
	if len(p.removed) > 0 {
		fmt.Fprintf(out, "removed %d files only in the workspace (--delete):\n", len(p.removed))
		listPaths(out, p.removed)
	}
}

func listPaths(out io.Writer, paths []string) {
	for k, path := range paths {
		if k == maxListed {
			fmt.Fprintf(out, "  … and %d more (cairn vfs diff lists them all)\n", len(paths)-maxListed)
			return
		}
		fmt.Fprintf(out, "  %s\n", path)
	}
}

// printDiff prints every path an import would touch, one per line, then a
// count of each kind.
func printDiff(out io.Writer, p importPlan) {
	line := func(mark string, paths []string) {
		for _, path := range paths {
			fmt.Fprintf(out, "%s %s\n", mark, path)
		}
	}
	line("+", p.added)
	line("~", p.changed)
	line("-", p.removed)
	line("=", p.kept)
	if p.unchanged() && len(p.kept) == 0 {
		fmt.Fprintln(out, "no differences")
		return
	}
	fmt.Fprintf(out, "import would add %d, change %d and remove %d files; %d files only in the workspace stay\n",
		len(p.added), len(p.changed), len(p.removed), len(p.kept))
}
