package core_test

import (
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

// Extending one slice two ways gives each holder its own items: the first
// extension goes in place, the second into a copy, and neither changes
// what the other, or the slice extended, holds. Extending the newest
// again goes in place.
func TestSharedSliceExtensionsStayApart(t *testing.T) {
	root := core.SharedSlice[int]{}.Extend(0, 1, 2, 3)
	left := root.Extend(3, 4, 5)
	right := root.Extend(3, 6)
	shorter := root.Extend(2, 7)
	for name, c := range map[string]struct {
		got  core.SharedSlice[int]
		want []int
	}{
		"root": {root, []int{1, 2, 3}}, "left": {left, []int{1, 2, 3, 4, 5}},
		"right": {right, []int{1, 2, 3, 6}}, "shorter": {shorter, []int{1, 2, 7}},
	} {
		if !slices.Equal(c.got.Items(), c.want) {
			t.Errorf("%s holds %v, want %v", name, c.got.Items(), c.want)
		}
	}
	next := left.Extend(5, 8)
	if &next.Items()[0] != &left.Items()[0] || !slices.Equal(left.Items(), []int{1, 2, 3, 4, 5}) {
		t.Fatalf("extending the newest slice copied it or changed it: %v, %v", next.Items(), left.Items())
	}
}
