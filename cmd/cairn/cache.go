package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/view"
)

func cacheCommand() *cobra.Command {
	var cf clientFlags
	var before int64
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cache SESSION",
		Short: "Print the prompt-cache report: per generation, the request's size, how much of the previous request it repeats, and what broke the prefix",
		Long: `Print the prompt-cache report of a session's latest generations (--before pages back).

Each row is one generation. REQUEST is the request body in bytes; PREFIX is
the bytes of the leading segments (tools, instructions, then each message or
item) it repeats unchanged from the previous generation's request, and REUSED
that as a share of the previous request's segment bytes. CACHED is the input
tokens the provider reported as read from its cache. When the prefix broke,
BROKEN BY names the first differing segment and, when one explains it, the
context or config event that changed it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			report, err := cf.client().CacheReport(cmd.Context(), api.CacheReportParams{SessionID: args[0], Before: before, Limit: limit})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, report)
			}
			if report.Cursor > 0 {
				fmt.Fprintf(out, "(earlier generations: cairn cache %s --before %d)\n", args[0], report.Cursor)
			}
			if len(report.Turns) == 0 {
				fmt.Fprintln(out, "no generations with request facts")
				return nil
			}
			return printCacheTable(out, report.Turns)
		},
	}
	cf.register(cmd)
	cmd.Flags().Int64Var(&before, "before", 0, "print the generations before this seq (the cursor a page prints)")
	cmd.Flags().IntVar(&limit, "limit", 0, "generations per page (default 50, at most 500)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the page as JSON ({turns, cursor})")
	return cmd
}

func printCacheTable(w io.Writer, turns []view.CacheTurn) error {
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tRUN\tTURN\tMODEL\tREQUEST\tPREFIX\tREUSED\tCACHED\tBROKEN BY")
	for _, t := range turns {
		prefix, reused := "-", "-"
		if t.PrefixFraction != nil {
			prefix = strconv.FormatInt(t.PrefixBytes, 10)
			reused = fmt.Sprintf("%.1f%%", *t.PrefixFraction*100)
		}
		cached := "-"
		if t.ProviderCachedTokens != nil {
			cached = strconv.FormatInt(*t.ProviderCachedTokens, 10)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\n", t.Seq, t.RunID, t.Turn, t.Model, t.RequestBytes, prefix, reused, cached, brokenBy(t.BrokenBy))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(buf.String()) {
		if _, err := fmt.Fprintln(w, strings.TrimRight(line, " \n")); err != nil {
			return err
		}
	}
	return nil
}

// brokenBy is, say, "segment 8 (skill_activation, removed) by seq 35
// context.entries_removed".
func brokenBy(b *view.BrokenBy) string {
	if b == nil {
		return ""
	}
	var s strings.Builder
	if b.Segment.Kind == view.SegmentModel {
		fmt.Fprintf(&s, "model changed to %s", b.Segment.Ref)
	} else {
		fmt.Fprintf(&s, "segment %d (%s", b.Segment.Index, b.Segment.Kind)
		switch {
		case b.Segment.Ref != "":
			s.WriteString(" " + b.Segment.Ref)
		case b.Segment.Key != "":
			s.WriteString(" " + b.Segment.Key)
		}
		if b.Segment.Previous {
			s.WriteString(", removed")
		}
		s.WriteString(")")
	}
	if b.Seq > 0 {
		fmt.Fprintf(&s, " by seq %d %s", b.Seq, b.Kind)
	} else {
		s.WriteString(", no event in the log explains it")
	}
	return s.String()
}
