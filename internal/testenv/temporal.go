package testenv

import (
	"net"
	"os"
	"testing"
	"time"
)

// TemporalAddress returns the host:port of the Temporal dev server that
// ./scripts/test starts (CAIRN_TEST_TEMPORAL), after checking it accepts
// connections. Tests use their own task queue and workflow ids.
func TemporalAddress(t testing.TB) string {
	t.Helper()
	addr := os.Getenv("CAIRN_TEST_TEMPORAL")
	if addr == "" {
		missing(t, "Temporal: CAIRN_TEST_TEMPORAL is not set")
		return ""
	}
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		missing(t, "Temporal at %s: %v", addr, err)
		return ""
	}
	conn.Close()
	return addr
}
