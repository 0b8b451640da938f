package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
)

func sessionsCommand() *cobra.Command {
	var cf clientFlags
	var asJSON, noChildren bool
	var limit int
	var before string
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List sessions, newest first, a page at a time (--before CURSOR for the next page)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := cf.client().ListSessions(cmd.Context(), api.SessionListParams{ExcludeChildren: noChildren, Limit: limit, Before: before})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "SESSION\tSTATUS\tMODEL\tEVENTS\tACTIVE RUN\tQUEUED\tUPDATED")
			for _, s := range res.Sessions {
				active := s.ActiveRunID
				if active == "" {
					active = "-"
				}
				fmt.Fprintf(w, "%s\t%s\t%s/%s\t%d\t%s\t%d\t%s\n", s.SessionID, s.Status, s.Model.ProviderID, s.Model.Model,
					s.Head, active, s.QueuedRuns, time.UnixMilli(s.UpdatedAtMs).UTC().Format(time.RFC3339))
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if res.Cursor != "" {
				flags := ""
				if noChildren {
					flags = " --no-children"
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "more sessions: cairn sessions%s --limit %d --before %s\n", flags, limit, res.Cursor)
			}
			return err
		},
	}
	cf.register(cmd)
	cmd.Flags().IntVar(&limit, "limit", 50, "sessions per page (at most 1000)")
	cmd.Flags().StringVar(&before, "before", "", "the cursor a previous page printed: list the sessions after it")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&noChildren, "no-children", false, "leave sub-agents' sessions out")
	return cmd
}

func eventsCommand() *cobra.Command {
	var cf clientFlags
	var after int64
	var limit int
	var follow bool
	cmd := &cobra.Command{
		Use:   "events SESSION",
		Short: "Print a session's events as JSON lines (--follow to wait for new ones)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := cf.client()
			for {
				p := api.EventsReadParams{SessionID: args[0], After: after, Limit: limit}
				if follow {
					p.WaitMs = 10_000
				}
				page, err := c.ReadEvents(cmd.Context(), p)
				if err != nil {
					return err
				}
				for _, ev := range page.Events {
					if err := printJSONLine(cmd.OutOrStdout(), ev); err != nil {
						return err
					}
					after = ev.Seq
				}
				if !follow && (len(page.Events) == 0 || after >= page.Head) {
					return nil
				}
			}
		},
	}
	cf.register(cmd)
	cmd.Flags().Int64Var(&after, "after", 0, "print events after this seq")
	cmd.Flags().IntVar(&limit, "limit", 0, "events per request (default 100, at most 1000)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep waiting for new events")
	return cmd
}

func contextCommand() *cobra.Command {
	var cf clientFlags
	var asJSON bool
	var at int64
	cmd := &cobra.Command{
		Use:   "context SESSION",
		Short: "Print a session's active context, in request order (now, or --at a seq)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The whole context, read a page after another by the client.
			c := cf.client()
			var res api.ContextReadResult
			var err error
			if at > 0 {
				res, err = c.ReadContextAt(cmd.Context(), args[0], at)
			} else {
				res, err = c.ReadContext(cmd.Context(), args[0])
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "revision %d, %d entries\n", res.Revision, len(res.Entries))
			fmt.Fprintln(w, "ENTRY\tKIND\tROLE/KEY\tSOURCE\tTOKENS\tPREVIEW")
			for _, e := range res.Entries {
				label := e.Role
				if e.Key != "" {
					label = e.Key
				}
				if e.ToolName != "" {
					label = e.ToolName
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\n", e.ID, e.Kind, label, e.Source, e.TokenEstimate.Tokens, oneLine(e.Preview, 60))
			}
			return w.Flush()
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().Int64Var(&at, "at", 0, "the context as it stood after event N")
	cmd.AddCommand(contextCompactCommand(), contextDiffCommand())
	return cmd
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printJSONLine(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }
