// Package testenv gives integration tests the real services they need:
// PostgreSQL, an S3-compatible server, Temporal. Outside CI a missing service
// skips the test with the reason; in CI (CI=true) it fails the test, so a
// green CI run never hides an untested backend. ./scripts/test starts every
// service and exports the variables read here.
package testenv

import (
	"os"
	"testing"
)

// InCI reports whether the tests run in CI, where no service may be missing.
func InCI() bool { return os.Getenv("CI") == "true" }

// missing fails the test in CI and skips it elsewhere.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf("required service missing in CI: "+format, args...)
	}
	t.Skipf("service missing (run ./scripts/test to start it): "+format, args...)
}
