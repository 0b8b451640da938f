package api

import (
	"maps"
	"slices"
)

// MethodNames lists every method the server routes, for tests that must
// cover them all.
func MethodNames() []string { return slices.Sorted(maps.Keys(routes())) }
