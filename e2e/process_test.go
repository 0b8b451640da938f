package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/internal/testenv"
)

// proc is a child process (a worker) whose stdout lines a test can wait for.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stderr *testenv.Buffer

	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed and replaced when a line arrives or stdout ends
	done    bool
}

// startProc starts bin with args and env (added to this process's) and waits
// for a stdout line starting with ready.
func startProc(t testing.TB, name, bin string, args, env []string, ready string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, stderr: &testenv.Buffer{}, changed: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s stderr (last 4 KiB):\n%s", name, tail(p.stderr.String(), 4096))
		}
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
		p.mu.Lock()
		p.done = true
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
	}()
	p.waitLine(t, 0, ready, 60*time.Second)
	return p
}

// mark is the number of stdout lines printed so far.
func (p *proc) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lines)
}

// waitLine waits for a stdout line after the first from lines that starts
// with prefix, and returns it.
func (p *proc) waitLine(t testing.TB, from int, prefix string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		for _, l := range p.lines[from:] {
			if strings.HasPrefix(l, prefix) {
				p.mu.Unlock()
				return l
			}
		}
		done, changed := p.done, p.changed
		p.mu.Unlock()
		if done {
			t.Fatalf("%s exited before printing %q; stderr:\n%s", p.name, prefix, tail(p.stderr.String(), 4096))
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%s did not print %q within %s; stderr:\n%s", p.name, prefix, timeout, tail(p.stderr.String(), 4096))
		}
	}
}

// kill stops the process with SIGKILL: no shutdown code runs, in-flight
// activities are abandoned, and Temporal learns of it only by timeouts.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
