package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
)

// cancelCommand cancels a run: the one named, or the session's active one.
func cancelCommand() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "cancel SESSION [RUN]",
		Short: "Cancel a run: the one named, or the session's active run",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := cf.client()
			session := args[0]
			var run string
			if len(args) == 2 {
				run = args[1]
			} else {
				read, err := c.ReadSession(cmd.Context(), session)
				if err != nil {
					return err
				}
				if read.ActiveRun == nil {
					return fmt.Errorf("session %s has no active run; name a queued one: cairn cancel %s RUN", session, session)
				}
				run = read.ActiveRun.RunID
			}
			res, err := c.CancelRun(cmd.Context(), session, run)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "run %s %s\n", res.RunID, res.Status)
			return err
		},
	}
	cf.register(cmd)
	return cmd
}

// steerCommand sends a steering message to the session's active run.
func steerCommand() *cobra.Command {
	var cf clientFlags
	var file string
	cmd := &cobra.Command{
		Use:   "steer SESSION MESSAGE... | -",
		Short: "Steer the session's active run: the message joins its context at the next turn boundary",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			message, _, err := chatMessage(args[1:], file, cmd.InOrStdin())
			if err != nil {
				return err
			}
			res, err := cf.client().Steer(cmd.Context(), api.SteerParams{SessionID: args[0], Input: []api.InputPart{{Type: "text", Text: message}}})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "steering %s accepted by run %s (it applies at the next turn boundary)\n", res.SteeringID, res.RunID)
			return err
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVar(&file, "file", "", "send this file's text as the message")
	return cmd
}
