package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
)

// approvalsCommand is `cairn approvals pending|decide`: a person's side of
// tool calls that need approval, for scripts.
func approvalsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "Approve or deny the tool calls that wait for a decision",
		Long: `A session created with approvals ({"TOOL": "always"}, or cairn chat --approve
TOOL) parks every call of those tools until a person decides (status
awaiting_approval). An approved call runs; a denied one gives the model an
error result carrying the reason.

  cairn approvals pending SESSION                              as JSON lines
  cairn approvals decide SESSION CALL_ID approve|deny [--reason TEXT]`,
	}
	cmd.AddCommand(pendingCommand("Print the calls that wait for a decision, one JSON object per line: {runId, callId, name, arguments}", (*api.Client).PendingApprovals),
		approvalsDecideCommand())
	return cmd
}

func approvalsDecideCommand() *cobra.Command {
	var cf clientFlags
	var reason string
	cmd := &cobra.Command{
		Use:   "decide SESSION CALL_ID approve|deny",
		Short: "Approve or deny a call that waits; a denial's --reason is what the model sees",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			var approve bool
			switch args[2] {
			case "approve":
				approve = true
			case "deny":
			default:
				return fmt.Errorf("decide %q: want approve or deny", args[2])
			}
			got, err := cf.client().DecideApproval(cmd.Context(), api.ApprovalDecideParams{SessionID: args[0], CallID: args[1], Approve: approve, Reason: reason})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "run %s %s\n", got.RunID, got.Status)
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why: kept with the decision; for a denial, what the model sees")
	return cmd
}
