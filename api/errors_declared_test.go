package api

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestMain holds each method's declared error kinds (its entry in the
// OpenRPC document) to what the package's tests saw it answer with: an
// error kind a test met that its method does not declare fails the run.
func TestMain(m *testing.M) {
	var mu sync.Mutex
	seen := map[string]bool{} // "method kind"
	errorSeen = func(method, kind string) {
		mu.Lock()
		seen[method+" "+kind] = true
		mu.Unlock()
	}
	code := m.Run()
	table := routes()
	var undeclared []string
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		method, kind, _ := strings.Cut(k, " ")
		if r, ok := table[method]; ok && !slices.Contains(r.errors, kind) && !slices.Contains(commonErrors, kind) {
			undeclared = append(undeclared, method+" answered "+kind)
		}
	}
	if len(undeclared) > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "methods answered error kinds they do not declare (add them in the route table):\n  %s\n", strings.Join(undeclared, "\n  "))
		code = 1
	}
	os.Exit(code)
}
