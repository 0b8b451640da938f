package e2e

import (
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/internal/testenv"
)

// interruptedChat runs `cairn chat` on a held answer with standard input
// on a pipe, and waits until the model call is in flight.
type interruptedChat struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *testenv.Buffer
	exited chan error
}

func startHeldChat(t *testing.T, srv *server, fake *fakeChat, n int) *interruptedChat {
	t.Helper()
	cmd := exec.Command(cairnBin, "chat", "--addr", srv.addr, "--provider", "fake", "--model", "m", "tell me a long story")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &interruptedChat{cmd: cmd, stdin: stdin, stdout: &testenv.Buffer{}, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = c.stdout, c.stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-c.exited })
	go func() { c.exited <- cmd.Wait() }()
	waitArrived(t, fake, n)
	c.waitOutput(t, " running\n") // "run ID running": Ctrl-C now applies to it
	return c
}

func (c *interruptedChat) interrupt(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
}

func (c *interruptedChat) waitOutput(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(c.stdout.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("chat never printed %q:\n%s", s, c.stdout.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *interruptedChat) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-c.exited:
		c.exited <- err // for the cleanup
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("chat did not exit:\n%s", c.stdout.String())
		return nil
	}
}

// Ctrl-C on chat asks whether to cancel the run: "y" cancels it. A second
// Ctrl-C instead leaves the run running and prints its id.
func TestE2E_CtrlCOnChatAsksThenLeavesTheRunRunning(t *testing.T) {
	fake := newFakeChat(t, fakeKey)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	fake.script(fakeStep{body: textResponse("chatcmpl-1", "never"), release: hold}, fakeStep{body: textResponse("chatcmpl-2", "never"), release: hold})
	dir := t.TempDir()
	srv := startServe(t, dir+"/data", writeProviderConfig(t, dir, fake), fakeKey)
	ctx := context.Background()

	// Asked, answered yes: the run is cancelled and chat says so.
	chat := startHeldChat(t, srv, fake, 0)
	chat.interrupt(t)
	chat.waitOutput(t, "? [y/N] (Ctrl-C again leaves it running)")
	if _, err := io.WriteString(chat.stdin, "y\n"); err != nil {
		t.Fatal(err)
	}
	if err := chat.wait(t); err == nil || !strings.Contains(chat.stdout.String(), "cancelled") {
		t.Fatalf("chat after answering y: %v\n%s", err, chat.stdout.String())
	}
	m := regexp.MustCompile(`session (\S+) .*\nrun (\S+) `).FindStringSubmatch(chat.stdout.String())
	if m == nil {
		t.Fatalf("no session and run in:\n%s", chat.stdout.String())
	}
	if r := waitRun(t, srv.client(), m[1], m[2]); r.Status != "cancelled" {
		t.Fatalf("the run is %s after the user cancelled it", r.Status)
	}

	// Ctrl-C twice: chat leaves, the run goes on in the server.
	chat = startHeldChat(t, srv, fake, 1)
	chat.interrupt(t)
	chat.waitOutput(t, "? [y/N]")
	chat.interrupt(t)
	if err := chat.wait(t); err != nil {
		t.Fatalf("chat after a second Ctrl-C: %v\n%s", err, chat.stdout.String())
	}
	m = regexp.MustCompile(`left run (\S+) running: follow it with .cairn events (\S+) --follow.`).FindStringSubmatch(chat.stdout.String())
	if m == nil {
		t.Fatalf("chat did not say which run it left:\n%s", chat.stdout.String())
	}
	read, err := srv.client().ReadSession(ctx, m[2])
	if err != nil || read.ActiveRun == nil || read.ActiveRun.RunID != m[1] {
		t.Fatalf("the left run is not running: %+v, %v", read.ActiveRun, err)
	}
}
