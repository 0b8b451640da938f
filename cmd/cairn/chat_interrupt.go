package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cairn-agents/cairn/api"
)

// chatInterrupt handles Ctrl-C while chat follows a run. The first asks
// whether to cancel the run: "y" cancels it (chat then shows the
// cancellation), anything else lets it go on. A second Ctrl-C leaves the
// run running, prints its id and how to reach it, and stops following.
// Without a terminal to answer on (the message came from standard input),
// the first Ctrl-C leaves. Before a run exists, Ctrl-C stops chat.
type chatInterrupt struct {
	out    io.Writer
	in     *answers // nil: no answer can be read
	client *api.Client
	sigs   chan os.Signal
	stop   context.CancelFunc
	done   chan struct{}
	left   atomic.Bool // the user left the run running

	mu           sync.Mutex
	session, run string
}

// watchInterrupts starts handling Ctrl-C; the returned context ends when
// the user leaves (or stops chat before the run), and release undoes it.
func watchInterrupts(ctx context.Context, out io.Writer, in *answers, c *api.Client) (*chatInterrupt, context.Context, func()) {
	ctx, stop := context.WithCancel(ctx)
	ci := &chatInterrupt{out: out, in: in, client: c, sigs: make(chan os.Signal, 2), stop: stop, done: make(chan struct{})}
	signal.Notify(ci.sigs, os.Interrupt)
	go ci.loop(ctx)
	return ci, ctx, func() {
		signal.Stop(ci.sigs)
		close(ci.done)
		stop()
	}
}

// following names the run Ctrl-C now applies to.
func (ci *chatInterrupt) following(session, run string) {
	ci.mu.Lock()
	ci.session, ci.run = session, run
	ci.mu.Unlock()
}

func (ci *chatInterrupt) loop(ctx context.Context) {
	for {
		select {
		case <-ci.sigs:
		case <-ci.done:
			return
		}
		ci.mu.Lock()
		session, run := ci.session, ci.run
		ci.mu.Unlock()
		if run == "" {
			ci.stop()
			return
		}
		if ci.in == nil {
			ci.leave(session, run)
			return
		}
		fmt.Fprintf(ci.out, "\ncancel run %s? [y/N] (Ctrl-C again leaves it running) ", run)
		select {
		case a, ok := <-ci.in.lines:
			if !ok { // input has ended: nobody can answer
				ci.leave(session, run)
				return
			}
			if strings.EqualFold(strings.TrimSpace(a), "y") || strings.EqualFold(strings.TrimSpace(a), "yes") {
				if _, err := ci.client.CancelRun(ctx, session, run); err != nil {
					fmt.Fprintf(ci.out, "cancelling run %s: %v\n", run, err)
				}
				continue
			}
			fmt.Fprintf(ci.out, "run %s goes on\n", run)
		case <-ci.sigs:
			ci.leave(session, run)
			return
		case <-ci.done:
			return
		}
	}
}

// leave stops following, leaving the run to the server.
func (ci *chatInterrupt) leave(session, run string) {
	ci.left.Store(true)
	fmt.Fprintf(ci.out, "\nleft run %s running: follow it with `cairn events %s --follow`, cancel it with `cairn cancel %s %s`\n", run, session, session, run)
	ci.stop()
}
