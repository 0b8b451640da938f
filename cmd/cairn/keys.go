package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/store/postgres"
)

// keyCommand manages a universe's API keys: add one (to rotate), list them
// by id, revoke one. Keys are looked up on every request, so a revocation
// takes effect at once on every server.
func keyCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "key", Short: "Add, list and revoke a universe's API keys"}
	var url string
	add := &cobra.Command{
		Use:   "add SLUG",
		Short: "Issue another API key for a universe and print it (alone, on the last line)",
		Args:  cobra.ExactArgs(1),
		RunE: withDB(&url, func(ctx context.Context, cmd *cobra.Command, db *postgres.DB, args []string) error {
			key, info, err := db.AddAPIKey(ctx, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "key %s added to universe %s\n", info.ID, args[0])
			fmt.Fprintln(out, "it follows; it is shown only now (only its hash is stored):")
			fmt.Fprintln(out, key)
			return nil
		}),
	}
	list := &cobra.Command{
		Use:   "list SLUG",
		Short: "List a universe's API keys by id (the keys themselves are not stored)",
		Args:  cobra.ExactArgs(1),
		RunE: withDB(&url, func(ctx context.Context, cmd *cobra.Command, db *postgres.DB, args []string) error {
			keys, err := db.APIKeys(ctx, args[0])
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tCREATED")
			for _, k := range keys {
				fmt.Fprintf(w, "%s\t%s\n", k.ID, k.CreatedAt.UTC().Format(time.RFC3339))
			}
			return w.Flush()
		}),
	}
	revoke := &cobra.Command{
		Use:   "revoke SLUG ID|KEY",
		Short: "Revoke one of a universe's API keys, named by its id or by the key; it stops working at once",
		Args:  cobra.ExactArgs(2),
		RunE: withDB(&url, func(ctx context.Context, cmd *cobra.Command, db *postgres.DB, args []string) error {
			k, err := db.RevokeAPIKey(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "key %s of universe %s revoked\n", k.ID, args[0])
			return nil
		}),
	}
	for _, c := range []*cobra.Command{add, list, revoke} {
		postgresFlag(c, &url, "PostgreSQL URL")
	}
	cmd.AddCommand(add, list, revoke)
	return cmd
}

// withDB runs an admin command against the hosted store at *url, once its
// schema is known to be current.
func withDB(url *string, run func(ctx context.Context, cmd *cobra.Command, db *postgres.DB, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		db, err := connectPostgres(cmd.Context(), *url)
		if err != nil {
			return err
		}
		defer db.Close()
		if err := db.CheckSchema(cmd.Context()); err != nil {
			return err
		}
		return run(cmd.Context(), cmd, db, args)
	}
}
