package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// runCommand groups the commands on one run.
func runCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Act on a session's runs",
	}
	cmd.AddCommand(runRetryCommand())
	return cmd
}

// runRetryCommand goes on with a failed run from where it stopped and
// follows the new run as chat does.
func runRetryCommand() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "retry SESSION [RUN]",
		Short: "Go on with a failed run from where it stopped (default: the session's last run)",
		Long: "Go on with a failed run from where it stopped, e.g. after a provider outage outlasted the retry budget.\n" +
			"A new run starts with no input of its own: the failed run's input is in context already, and its\n" +
			"skills are activated again. Only the session's last run can be retried. The new run is followed as\n" +
			"`cairn chat` follows one.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := cf.client()
			ctx := cmd.Context()
			session := args[0]
			before, err := c.ReadSession(ctx, session)
			if err != nil {
				return err
			}
			failed := ""
			if len(args) == 2 {
				failed = args[1]
			} else {
				runs, err := c.ListRuns(ctx, api.RunsListParams{SessionID: session, Limit: 1})
				if err != nil {
					return err
				}
				if len(runs.Runs) == 0 {
					return fmt.Errorf("session %s has no runs", session)
				}
				failed = runs.Runs[0].RunID
			}
			run, err := c.RetryRun(ctx, session, failed)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "run %s %s (retries %s)\n", run.RunID, run.Status, failed)
			f := &follower{client: c, out: out, session: session}
			status, err := f.follow(ctx, run.RunID, before.Head)
			if err != nil {
				return err
			}
			return runEnded(session, run.RunID, status)
		},
	}
	cf.register(cmd)
	return cmd
}

// runEnded is the error of a command whose run did not complete; a failed
// run's says how to go on with it.
func runEnded(session, runID, status string) error {
	switch status {
	case core.StatusCompleted:
		return nil
	case core.StatusFailed:
		return fmt.Errorf("run %s failed; go on from where it stopped with: cairn run retry %s %s", runID, session, runID)
	}
	return fmt.Errorf("run %s %s", runID, status)
}
