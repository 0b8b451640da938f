package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
)

// A data directory belongs to one process: a second `cairn serve` on it
// refuses to start and names the holder, and so does `cairn gc`; once the
// holder is killed (no shutdown code runs) the directory is free again.
func TestE2E_SecondServerOnOneDataDirectoryRefusesToStart(t *testing.T) {
	data := t.TempDir()
	first := startServeWith(t, []string{"--data", data})
	holder := fmt.Sprintf("in use by process %d", first.cmd.Process.Pid)

	out, err := exec.Command(cairnBin, "serve", "--listen", "127.0.0.1:0", "--data", data).CombinedOutput()
	if err == nil || !strings.Contains(string(out), holder) {
		t.Fatalf("a second serve on the same directory: %v\n%s", err, out)
	}
	out, err = exec.Command(cairnBin, "gc", "--data", data).CombinedOutput()
	if err == nil || !strings.Contains(string(out), holder) || !strings.Contains(string(out), "--gc-interval") {
		t.Fatalf("gc beside a server: %v\n%s", err, out)
	}
	// The first server still serves.
	if _, err := first.client().ListSessions(t.Context(), api.SessionListParams{}); err != nil {
		t.Fatalf("the first server after the refused second: %v", err)
	}

	first.kill(t)
	if out, err := exec.Command(cairnBin, "gc", "--data", data, "--dry-run").CombinedOutput(); err != nil {
		t.Fatalf("gc after the server was killed: %v\n%s", err, out)
	}
	startServeWith(t, []string{"--data", data})
}
