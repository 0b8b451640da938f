package core

import (
	"strings"

	"github.com/cairn-agents/cairn/content"
)

// validateLinks checks a config's links: absolute, clean mount paths that
// do not overlap (no mount inside another), and exactly one target each.
func validateLinks(links []Link) error {
	for i, l := range links {
		if !validMount(l.Mount) {
			return reject(RejectInvalidConfiguration, "links[%d].mount %q must be an absolute, clean path like /work", i, l.Mount)
		}
		switch {
		case (l.Workspace == "") == (l.Snapshot == ""):
			return reject(RejectInvalidConfiguration, "links[%d] must name exactly one of workspace or snapshot", i)
		case l.Snapshot != "" && !content.IsDigestString(l.Snapshot):
			return reject(RejectInvalidConfiguration, "links[%d].snapshot must be a manifest digest (sha256:<64 hex>)", i)
		}
		for j, other := range links[:i] {
			if overlaps(l.Mount, other.Mount) {
				return reject(RejectInvalidConfiguration, "links[%d] at %s overlaps links[%d] at %s", i, l.Mount, j, other.Mount)
			}
		}
	}
	return nil
}

// validMount accepts "/" or "/a/b": absolute, no empty, "." or ".." segments,
// no trailing slash.
func validMount(m string) bool {
	if m == "/" {
		return true
	}
	if !strings.HasPrefix(m, "/") || strings.HasSuffix(m, "/") {
		return false
	}
	for _, seg := range strings.Split(m[1:], "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsAny(seg, "\\\x00") {
			return false
		}
	}
	return true
}

// overlaps reports whether one mount is the other or lies inside it.
func overlaps(a, b string) bool {
	inside := func(x, y string) bool { return x == y || y == "/" || strings.HasPrefix(x, y+"/") }
	return inside(a, b) || inside(b, a)
}
