package main

import (
	"strconv"
	"strings"
	"testing"
)

// Every counter FILE.metrics promises is one the runtime has: a name it
// does not know would be left out without a word.
func TestRuntimeCountsNameEveryCounter(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(string(runtimeCounts())), "\n")
	if len(lines) != 6 {
		t.Fatalf("runtimeCounts gave %d lines, want 6:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, line := range lines {
		name, value, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(name, "/") {
			t.Fatalf("line %q is not `name value`", line)
		}
		if v, err := strconv.ParseFloat(value, 64); err != nil || v < 0 {
			t.Fatalf("%s = %q, want a count", name, value)
		}
		if name == "/sched/goroutines-created:goroutines" && value == "0" {
			t.Fatalf("%s = 0: this test's own goroutine was created", name)
		}
	}
}
