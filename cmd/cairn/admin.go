package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/store/postgres"
)

// postgresFlag adds --postgres (env CAIRN_POSTGRES).
func postgresFlag(cmd *cobra.Command, url *string, usage string) {
	cmd.Flags().StringVar(url, "postgres", os.Getenv("CAIRN_POSTGRES"), usage+" (env CAIRN_POSTGRES)")
}

func connectPostgres(ctx context.Context, url string) (*postgres.DB, error) {
	if url == "" {
		return nil, fmt.Errorf("--postgres URL (or CAIRN_POSTGRES) is required")
	}
	return postgres.Connect(ctx, url)
}

func migrateCommand() *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the hosted store's schema migrations to PostgreSQL",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := connectPostgres(cmd.Context(), url)
			if err != nil {
				return err
			}
			defer db.Close()
			applied, err := db.Migrate(cmd.Context())
			if err != nil {
				return err
			}
			for _, m := range applied {
				fmt.Fprintf(cmd.OutOrStdout(), "applied %s\n", m.Name)
			}
			all := postgres.Migrations()
			fmt.Fprintf(cmd.OutOrStdout(), "schema at version %d\n", all[len(all)-1].Version)
			return nil
		},
	}
	postgresFlag(cmd, &url, "PostgreSQL URL")
	return cmd
}

func universeCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "universe", Short: "Manage universes (tenants) of the hosted store"}
	var url string
	create := &cobra.Command{
		Use:   "create SLUG",
		Short: "Create a universe and print its API key (alone, on the last line)",
		Args:  cobra.ExactArgs(1),
		RunE: withDB(&url, func(ctx context.Context, cmd *cobra.Command, db *postgres.DB, args []string) error {
			key, err := db.CreateUniverse(ctx, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "universe %s created\n", args[0])
			fmt.Fprintln(out, "its API key follows; it is shown only now (only its hash is stored):")
			fmt.Fprintln(out, key)
			return nil
		}),
	}
	postgresFlag(create, &url, "PostgreSQL URL")
	cmd.AddCommand(create, keyCommand())
	return cmd
}
