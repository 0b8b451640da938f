package store

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cairn-agents/cairn/content"
)

// ErrInvalidEdge is matched by errors for PutEdges requests no backend would
// accept: a zero digest, or a blob named as its own child.
var ErrInvalidEdge = errors.New("invalid retention edge")

// PrepareEdges checks a PutEdges request the same way in every backend. It
// returns the children sorted and de-duplicated, and every digest that must
// exist for the request to succeed (parent and children, sorted, unique).
//
// A self-edge is refused rather than ignored: real formats cannot contain
// their own hash, so one signals a caller bug, and a collector that keeps
// blobs with incoming edges would otherwise keep that blob forever.
func PrepareEdges(parent content.Digest, children []content.Digest) (kids, need []content.Digest, err error) {
	if parent.IsZero() {
		return nil, nil, fmt.Errorf("%w: zero parent digest", ErrInvalidEdge)
	}
	kids = slices.Clone(children)
	content.SortDigests(kids)
	kids = slices.Compact(kids)
	for _, c := range kids {
		switch {
		case c.IsZero():
			return nil, nil, fmt.Errorf("%w: zero child digest under %s", ErrInvalidEdge, parent)
		case c == parent:
			return nil, nil, fmt.Errorf("%w: %s cannot be its own child", ErrInvalidEdge, parent)
		}
	}
	need = append(slices.Clone(kids), parent)
	content.SortDigests(need)
	return kids, need, nil
}
