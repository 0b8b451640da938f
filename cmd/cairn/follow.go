package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/view"
)

// follower prints a run's events as they are committed, until the run ends.
type follower struct {
	client  *api.Client
	out     io.Writer
	json    bool
	session string
	names   map[string]string // call id → tool name
	// in answers approval prompts; nil prints how to decide instead
	in *answers
	// streaming is set once an answer's text has been printed as it
	// streamed, so the committed answer is not printed again.
	streaming bool
	// open is set while the answer's text streams on an unfinished line.
	open bool
	// args are the streamed arguments of calls not shown yet, by call id;
	// shownCalls are the calls shown once their arguments were whole.
	args       map[string]string
	shownCalls map[string]bool
}

// closeLine ends the line a stream left open.
func (f *follower) closeLine() {
	if f.open {
		fmt.Fprintln(f.out)
		f.open = false
	}
}

// delta prints a piece of the followed run's answer as it streams: text
// under "assistant>" as it comes, and a tool call's line once its
// arguments are whole (they are a JSON object, so a piece completes them
// when they parse).
func (f *follower) delta(d runtime.GenerationDelta) {
	switch {
	case d.Kind == "text":
		if !f.open {
			if !f.streaming {
				fmt.Fprint(f.out, "assistant>\n")
			}
			fmt.Fprint(f.out, "  ")
			f.open, f.streaming = true, true
		}
		fmt.Fprint(f.out, strings.ReplaceAll(d.Text, "\n", "\n  "))
	case d.Kind == "tool_arguments" && d.CallID != "" && !f.shownCalls[d.CallID]:
		if f.args == nil {
			f.args, f.shownCalls = map[string]string{}, map[string]bool{}
		}
		f.args[d.CallID] += d.Text
		if args := f.args[d.CallID]; json.Valid([]byte(args)) {
			f.closeLine()
			fmt.Fprintf(f.out, "[turn %d] tool call %s %s\n", d.Turn, d.Name, oneLine(args, 120))
			f.shownCalls[d.CallID], f.names[d.CallID] = true, d.Name
			delete(f.args, d.CallID)
		}
	}
}

// follow prints the events of runID after `after` until the run completes,
// fails or is cancelled, and returns its final status. It reads the
// session's stream, printing the answer as the model writes it; JSON output
// (one line per committed event) and a server without the stream long-poll
// session/events/read instead.
func (f *follower) follow(ctx context.Context, runID string, after int64) (string, error) {
	if f.names == nil {
		f.names = map[string]string{}
	}
	if !f.json {
		status, err := f.stream(ctx, runID, &after)
		if !errors.Is(err, api.ErrNoStream) {
			return status, err
		}
		// An older server without /sessions/{id}/stream: long-poll.
	}
	for {
		page, err := f.client.ReadEvents(ctx, api.EventsReadParams{SessionID: f.session, After: after, WaitMs: 10_000})
		if err != nil {
			return "", err
		}
		for _, ev := range page.Events {
			after = ev.Seq
			if !joins(ev, runID) {
				continue
			}
			if err := f.print(ctx, ev); err != nil {
				return "", err
			}
			switch ev.Kind {
			case core.KindRunCompleted:
				return core.StatusCompleted, nil
			case core.KindRunFailed:
				return core.StatusFailed, nil
			case core.KindRunCancelled:
				return core.StatusCancelled, nil
			}
		}
	}
}

// errRunEnded stops a stream once the followed run has ended.
var errRunEnded = errors.New("run ended")

// stream follows the run on the session's event stream.
func (f *follower) stream(ctx context.Context, runID string, after *int64) (string, error) {
	var status string
	err := f.client.Stream(ctx, f.session, *after, func(se api.StreamEvent) error {
		if d := se.Delta; d != nil {
			if d.RunID == runID {
				f.delta(*d)
			}
			return nil
		}
		ev := *se.Committed
		*after = ev.Seq
		if !joins(ev, runID) {
			return nil
		}
		f.closeLine()
		if err := f.print(ctx, ev); err != nil {
			return err
		}
		switch ev.Kind {
		case core.KindRunCompleted:
			status = core.StatusCompleted
		case core.KindRunFailed:
			status = core.StatusFailed
		case core.KindRunCancelled:
			status = core.StatusCancelled
		default:
			return nil
		}
		return errRunEnded
	})
	if errors.Is(err, errRunEnded) {
		return status, nil
	}
	return status, err
}

func joins(ev api.EventView, runID string) bool {
	for _, j := range ev.Joins {
		if j == "run:"+runID {
			return true
		}
	}
	return false
}

func (f *follower) print(ctx context.Context, ev api.EventView) error {
	if f.json {
		line, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(f.out, "%s\n", line)
		return err
	}
	switch ev.Kind {
	case core.KindTurnPlanned:
		var p core.TurnPlanned
		_ = json.Unmarshal(ev.Payload, &p)
		fmt.Fprintf(f.out, "[turn %d] request planned at context revision %d\n", p.Turn, p.ContextRevision)
	case core.KindToolCallStarted:
		var p core.ToolCallStarted
		_ = json.Unmarshal(ev.Payload, &p)
		f.names[p.CallID] = p.Name
		if f.shownCalls[p.CallID] {
			return nil // its line went out as its arguments streamed
		}
		args, err := f.client.Get(ctx, p.Arguments.Digest)
		if err != nil {
			return err
		}
		fmt.Fprintf(f.out, "[turn %d] tool call %s %s\n", p.Turn, p.Name, oneLine(string(args), 120))
	case core.KindToolApprovalRequested:
		var p core.ToolApprovalRequested
		_ = json.Unmarshal(ev.Payload, &p)
		return f.askApproval(ctx, p)
	case core.KindToolCallAwaiting:
		var p core.ToolCallAwaiting
		_ = json.Unmarshal(ev.Payload, &p)
		return f.printAwaiting(ctx, p)
	case core.KindContextEntriesApplied:
		var p core.ContextEntriesApplied
		_ = json.Unmarshal(ev.Payload, &p)
		for _, e := range p.Entries {
			if err := f.printEntry(ctx, e); err != nil {
				return err
			}
		}
	case core.KindRunSteeringAccepted:
		var p core.RunSteeringAccepted
		_ = json.Unmarshal(ev.Payload, &p)
		for _, in := range p.Input {
			fmt.Fprintf(f.out, "[steer] %q (applies at the next turn boundary)\n", in.Preview)
		}
	case core.KindRunCompleted:
		fmt.Fprintf(f.out, "run completed\n")
	case core.KindRunFailed:
		var p core.RunFailed
		_ = json.Unmarshal(ev.Payload, &p)
		fmt.Fprintf(f.out, "run failed: %s: %s\n", p.Error.Kind, p.Error.Message)
	case core.KindRunCancelled:
		fmt.Fprintf(f.out, "run cancelled\n")
	}
	return nil
}

// askApproval prints a call that waits for approval and asks y/n; without
// an answer (no input, or its end) it prints how to decide and follows on.
func (f *follower) askApproval(ctx context.Context, p core.ToolApprovalRequested) error {
	pending, err := f.client.PendingApprovals(ctx, f.session)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(pending.Calls, func(c api.PendingCall) bool { return c.CallID == p.CallID })
	if i < 0 {
		return nil // decided meanwhile
	}
	c := pending.Calls[i]
	fmt.Fprintf(f.out, "[turn %d] approval needed: %s %s\n", p.Turn, c.Name, oneLine(c.Arguments, 200))
	if f.in != nil {
		fmt.Fprintf(f.out, "approve? [y/N] ")
		line, ok := f.in.next()
		if answer := strings.ToLower(strings.TrimSpace(line)); answer != "" || ok {
			approve := answer == "y" || answer == "yes"
			if _, err := f.client.DecideApproval(ctx, api.ApprovalDecideParams{SessionID: f.session, CallID: c.CallID, Approve: approve}); err != nil {
				return err
			}
			decision := "denied"
			if approve {
				decision = "approved"
			}
			fmt.Fprintf(f.out, "[turn %d] %s %s\n", p.Turn, decision, c.Name)
			return nil
		}
		fmt.Fprintln(f.out)
	}
	fmt.Fprintf(f.out, "  decide with: cairn approvals decide %s %s approve|deny\n", f.session, c.CallID)
	return nil
}

// printAwaiting prints a call that waits for the client as the JSON line
// `cairn tools pending` prints, and how to answer it; the run goes on once
// it is answered (from another terminal or a script).
func (f *follower) printAwaiting(ctx context.Context, p core.ToolCallAwaiting) error {
	pending, err := f.client.PendingTools(ctx, f.session)
	if err != nil {
		return err
	}
	for _, c := range pending.Calls {
		if c.CallID != p.CallID {
			continue
		}
		line, err := json.Marshal(c)
		if err != nil {
			return err
		}
		fmt.Fprintf(f.out, "[turn %d] waiting for the client: %s\n", p.Turn, line)
		fmt.Fprintf(f.out, "  answer with: cairn tools submit %s %s TEXT\n", f.session, p.CallID)
	}
	return nil
}

func (f *follower) printEntry(ctx context.Context, e core.Entry) error {
	switch {
	case e.Kind == core.EntryMessage && e.Role == core.RoleUser:
		fmt.Fprintf(f.out, "user> %s\n", oneLine(e.Preview, 200))
	case e.Kind == core.EntryToolResult:
		fmt.Fprintf(f.out, "        result %s: %s\n", e.ToolName, oneLine(e.Preview, 120))
	case e.Kind == core.EntryMessage && e.Role == core.RoleAssistant && f.streaming:
		f.streaming = false // its text went out as the model wrote it
	case e.Kind == core.EntryMessage && e.Role == core.RoleAssistant:
		text, err := view.ProjectText(ctx, f.client, e.Content)
		if err != nil {
			return err
		}
		if strings.TrimSpace(text) != "" {
			fmt.Fprintf(f.out, "assistant>\n%s\n", indent(strings.TrimRight(text, "\n")))
		}
	}
	return nil
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }
