package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/view"
)

func transcriptCommand() *cobra.Command {
	var cf clientFlags
	var before int64
	var limit int
	var follow, asJSON bool
	cmd := &cobra.Command{
		Use:   "transcript SESSION",
		Short: "Print what happened in a session, readably: its latest events (--before pages back, --follow waits for new ones)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if follow && before > 0 {
				return errors.New("--follow continues from the session's head; it does not combine with --before")
			}
			c := cf.client()
			page, err := c.ReadTranscript(cmd.Context(), api.TranscriptReadParams{SessionID: args[0], Before: before, Limit: limit})
			if err != nil {
				return err
			}
			p := &transcriptPrinter{out: cmd.OutOrStdout(), json: asJSON, names: map[string]string{}}
			if asJSON && !follow {
				return printJSON(p.out, page)
			}
			if page.Cursor > 0 && !asJSON {
				fmt.Fprintf(p.out, "(earlier events: cairn transcript %s --before %d)\n", args[0], page.Cursor)
			}
			if err := p.printAll(page.Events); err != nil {
				return err
			}
			if !follow {
				return nil
			}
			err = followTranscript(cmd.Context(), c, p, args[0], page.Head, limit)
			if cmd.Context().Err() != nil {
				return nil // interrupted: following ends normally
			}
			return err
		},
	}
	cf.register(cmd)
	cmd.Flags().Int64Var(&before, "before", 0, "print the page of events before this seq (the cursor a page prints)")
	cmd.Flags().IntVar(&limit, "limit", 0, "events per page (default 50, at most 500)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "then keep printing new events as they are committed")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the page as JSON ({events, head, cursor}); with --follow, one event per line")
	return cmd
}

// followTranscript prints the events after head as they are committed. It
// waits with the session/events/read long poll, then reads the transcript
// forward from the last printed seq.
func followTranscript(ctx context.Context, c *api.Client, p *transcriptPrinter, session string, head int64, limit int) error {
	after := head
	for {
		w, err := c.ReadEvents(ctx, api.EventsReadParams{SessionID: session, After: after, Limit: 1, WaitMs: 10_000})
		if err != nil {
			return err
		}
		if len(w.Events) == 0 {
			continue
		}
		for {
			page, err := c.ReadTranscript(ctx, api.TranscriptReadParams{SessionID: session, After: &after, Limit: limit})
			if err != nil {
				return err
			}
			if err := p.printAll(page.Events); err != nil {
				return err
			}
			if n := len(page.Events); n > 0 {
				after = page.Events[n-1].Seq
			}
			if len(page.Events) == 0 || after >= page.Head {
				break
			}
		}
	}
}

// transcriptPrinter prints transcript events: as JSON lines, or as one
// readable block per event that has a display.
type transcriptPrinter struct {
	out   io.Writer
	json  bool
	names map[string]string // call id → tool name
}

func (p *transcriptPrinter) printAll(evs []view.TranscriptEvent) error {
	for _, ev := range evs {
		if err := p.print(ev); err != nil {
			return err
		}
	}
	return nil
}

func (p *transcriptPrinter) print(ev view.TranscriptEvent) error {
	if p.json {
		return printJSONLine(p.out, ev)
	}
	d := ev.Display
	if d == nil {
		return nil
	}
	switch d.Kind {
	case view.DisplayEntries:
		p.entries(d.Entries)
	case view.DisplayInput:
		for _, in := range d.Input {
			p.block("user", in)
		}
	case view.DisplaySteering:
		for _, in := range d.Input {
			p.block("user (steering)", in)
		}
	case view.DisplayToolCall:
		p.names[d.CallID] = d.Name
		p.line("tool> %s %s", d.Name, shown(d.Content))
		if d.ChildSessionID != "" {
			p.line("      sub-agent session %s", d.ChildSessionID)
		}
	case view.DisplayToolResult:
		name := p.names[d.CallID]
		if name == "" {
			name = d.CallID
		}
		p.line("result> %s [%s] %s", name, d.Status, shown(d.Content))
	case view.DisplayOutput:
		// The output is the run's last assistant message, already printed.
		if d.Content != nil && d.Content.IsMedia() {
			p.line("-- run %s completed: %s", d.RunID, shown(d.Content))
		} else {
			p.line("-- run %s completed", d.RunID)
		}
	case view.DisplayFailure:
		what := "run " + d.RunID
		if d.CompactionID != "" {
			what = "compaction " + d.CompactionID
		}
		p.line("-- %s failed: %s: %s", what, d.Failure.Kind, d.Failure.Message)
	case view.DisplayCancelRequested:
		p.line("-- cancel requested for run %s %s", d.RunID, d.Reason)
	case view.DisplayCancelled:
		p.line("-- run %s cancelled", d.RunID)
	case view.DisplayWarning:
		p.line("-- warning (%s): %s", d.Source, d.Message)
	case view.DisplayCompactionRequested:
		p.line("-- compaction %s requested (%s): %d entries, about %d tokens", d.CompactionID, d.Trigger, d.Count, d.EstimatedTokens)
	case view.DisplayCompacted:
		p.line("-- context compacted (%s): %d entries removed (%s), replaced by %d", d.Trigger, d.Count, oneLine(strings.Join(d.RemovedEntryIDs, " "), 80), len(d.Entries))
		p.entries(d.Entries)
	case view.DisplayRemoved:
		if len(d.RemovedKeys) > 0 {
			p.line("-- context: removed keys %s", strings.Join(d.RemovedKeys, " "))
		} else {
			p.line("-- context: removed entries %s", strings.Join(d.RemovedEntryIDs, " "))
		}
	}
	return nil
}

// entries prints context entries. A run's input and its tool calls and
// results have their own events, so their entries are not repeated.
func (p *transcriptPrinter) entries(es []view.TranscriptEntry) {
	for _, e := range es {
		switch {
		case e.Kind == core.EntryToolCall || e.Kind == core.EntryToolResult:
		case e.Kind == core.EntryMessage && e.Source == core.SourceUser:
		case e.Kind == core.EntryMessage && e.Content.Text != nil && strings.TrimSpace(*e.Content.Text) == "" && !e.Content.Refusal:
			// A turn that only called tools: its message says nothing, and
			// its calls have their own lines.
		case e.Kind == core.EntryMessage:
			p.block(e.Role, e.Content)
		case e.Kind == core.EntryReasoning || e.Kind == core.EntrySummary || e.Kind == core.EntryInstructions:
			p.block(e.Kind, e.Content)
		default:
			label := e.Kind
			if e.Key != "" {
				label += " " + e.Key
			}
			p.line("[%s] %s", label, shown(&e.Content))
		}
	}
}

// block prints "label> text", continuing a multi-line text indented.
func (p *transcriptPrinter) block(label string, c view.Content) {
	if label == "" {
		label = "message"
	}
	if c.Refusal {
		label += " (refusal)"
	}
	text := shown(&c)
	if c.Text != nil {
		text = strings.TrimRight(*c.Text, "\n")
	}
	fmt.Fprintf(p.out, "%s> %s\n", label, strings.ReplaceAll(text, "\n", "\n  "))
}

func (p *transcriptPrinter) line(format string, args ...any) {
	fmt.Fprintln(p.out, strings.TrimRight(fmt.Sprintf(format, args...), " "))
}

// shown is content on one line: its text or preview, or [media type ref].
func shown(c *view.Content) string {
	switch {
	case c == nil:
		return ""
	case c.Text != nil:
		return oneLine(*c.Text, 200)
	case c.Preview != "":
		return oneLine(c.Preview, 200)
	}
	return "[" + c.Ref.MediaType + " " + c.Ref.Digest.String() + "]"
}
