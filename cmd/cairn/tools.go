package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
)

// toolsCommand is `cairn tools pending|submit`: the client's side of client
// tools, for scripts.
func toolsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Answer the calls a session's model made to client tools",
		Long: `A client tool is one the session's creator defined (session/create "tools"
with {name, description, parameters}) and runs itself: when the model calls it,
the run waits (status awaiting_tools) until the result is submitted.

  cairn tools pending SESSION               the calls that wait, as JSON lines
  cairn tools submit SESSION CALL_ID TEXT   answer one (TEXT "-" or absent: stdin)`,
	}
	cmd.AddCommand(pendingCommand("Print the calls that wait for the client, one JSON object per line: {runId, callId, name, arguments}", (*api.Client).PendingTools),
		toolsSubmitCommand())
	return cmd
}

// pendingCommand prints, one JSON object per line ({runId, callId, name,
// arguments}), the calls list returns: those that wait for the client, or
// for a decision.
func pendingCommand(short string, list func(*api.Client, context.Context, string) (api.ToolsPendingResult, error)) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "pending SESSION",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			got, err := list(cf.client(), cmd.Context(), args[0])
			if err != nil {
				return err
			}
			for _, c := range got.Calls {
				if err := printJSONLine(cmd.OutOrStdout(), c); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cf.register(cmd)
	return cmd
}

func toolsSubmitCommand() *cobra.Command {
	var cf clientFlags
	var isError bool
	cmd := &cobra.Command{
		Use:   "submit SESSION CALL_ID [TEXT|-]",
		Short: "Submit the result of a waiting call: TEXT, or stdin when it is - or absent",
		Args:  cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			text := ""
			if len(args) == 3 && args[2] != "-" {
				text = args[2]
			} else {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), api.DefaultMaxBodyBytes/2+1))
				if err != nil {
					return fmt.Errorf("reading the result from stdin: %w", err)
				}
				if len(b) > api.DefaultMaxBodyBytes/2 {
					return fmt.Errorf("the result on stdin is over %d bytes: upload it with blobs/put and submit its ref", api.DefaultMaxBodyBytes/2)
				}
				text = string(b)
			}
			got, err := cf.client().SubmitTool(cmd.Context(), api.ToolSubmitParams{SessionID: args[0], CallID: args[1], Output: &api.ToolOutput{Text: text}, IsError: isError})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "run %s %s\n", got.RunID, got.Status)
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&isError, "error", false, "the tool failed: the model sees the text as an error")
	return cmd
}
