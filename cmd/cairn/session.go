package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// sessionCommand groups the session lifecycle: fork, clone, close, delete.
func sessionCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Fork, clone, close or delete a session",
	}
	cmd.AddCommand(sessionForkCommand(), sessionUpdateCommand(), sessionCloneCommand(), sessionCloseCommand(), sessionDeleteCommand())
	return cmd
}

func sessionForkCommand() *cobra.Command {
	var cf clientFlags
	var at int64
	var newID string
	var asJSON bool
	var f configFlags
	cmd := &cobra.Command{
		Use:   "fork SESSION",
		Short: "Create a history fork: a new session over SESSION's events up to --at (default: the latest point no run spans)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			u, err := changesFor(cmd, &cf, &f, args[0])
			if err != nil {
				return err
			}
			p := api.SessionForkParams{SessionID: args[0], NewSessionID: newID, Model: u.Model, Tools: u.Tools, Instructions: u.Instructions, ProviderParams: u.ProviderParams, Compaction: u.Compaction}
			if cmd.Flags().Changed("at") {
				p.AtSeq = &at
			}
			res, err := cf.client().ForkSession(cmd.Context(), p)
			if err != nil {
				return forkHint(err)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s (fork of %s at seq %d)\n", res.SessionID, args[0], res.AtSeq)
			return err
		},
	}
	cf.register(cmd)
	f.register(cmd)
	cmd.Flags().Int64Var(&at, "at", 0, "fork after this seq")
	cmd.Flags().StringVar(&newID, "id", "", "id of the new session (default: a fresh one)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// forkHint adds the safe fork point to a fork_point_inside_run error.
func forkHint(err error) error {
	if e, ok := err.(*api.Error); ok && e.Kind() == api.KindForkPointInsideRun && e.Data.SafeSeq != nil {
		return fmt.Errorf("%w (try --at %d)", err, *e.Data.SafeSeq)
	}
	return err
}

func sessionCloneCommand() *cobra.Command {
	var cf clientFlags
	var newID string
	var asJSON bool
	var f configFlags
	cmd := &cobra.Command{
		Use:   "clone SESSION",
		Short: "Create a new session with SESSION's current configuration and instructions, and none of its history",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			u, err := changesFor(cmd, &cf, &f, args[0])
			if err != nil {
				return err
			}
			res, err := cf.client().CloneSession(cmd.Context(), api.SessionCloneParams{SessionID: args[0], NewSessionID: newID,
				Model: u.Model, Tools: u.Tools, Instructions: u.Instructions, ProviderParams: u.ProviderParams, Compaction: u.Compaction})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s (clone of %s)\n", res.SessionID, args[0])
			return err
		},
	}
	cf.register(cmd)
	f.register(cmd)
	cmd.Flags().StringVar(&newID, "id", "", "id of the new session (default: a fresh one)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// changesFor are the configuration flags given, as changes of session; it
// reads the session's model when the flags change only half of it.
func changesFor(cmd *cobra.Command, cf *clientFlags, f *configFlags, session string) (api.SessionUpdateParams, error) {
	var current core.ModelSelection
	if f.needsModel(cmd) {
		read, err := cf.client().ReadSession(cmd.Context(), session)
		if err != nil {
			return api.SessionUpdateParams{}, err
		}
		current = read.Model
	}
	return f.changes(cmd, current)
}

func sessionCloseCommand() *cobra.Command {
	var cf clientFlags
	var reason string
	cmd := &cobra.Command{
		Use:   "close SESSION",
		Short: "Close a session: it admits no more runs, and stays readable",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := cf.client().CloseSession(cmd.Context(), api.SessionCloseParams{SessionID: args[0], Reason: reason})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", res.SessionID, res.Status)
			return err
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why the session was closed (recorded in its log)")
	return cmd
}

func sessionDeleteCommand() *cobra.Command {
	var cf clientFlags
	var cascade bool
	cmd := &cobra.Command{
		Use:   "delete SESSION",
		Short: "Delete a closed session (--cascade: with every history fork below it, all closed)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := cf.client().DeleteSession(cmd.Context(), api.SessionDeleteParams{SessionID: args[0], Cascade: cascade})
			var apiErr *api.Error
			if errors.As(err, &apiErr) && apiErr.Data != nil && apiErr.Data.Kind == api.KindSessionHasForks {
				return fmt.Errorf("%w\n  with its forks: cairn session delete %s --cascade (each must be closed)", err, args[0])
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", strings.Join(res.Deleted, " "))
			return err
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&cascade, "cascade", false, "also delete the session's history forks, and theirs")
	return cmd
}
