package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/store/sqlite"
)

// gcCommand runs one blob-collector pass over the store `serve` would open.
func gcCommand() *cobra.Command {
	var o serveOptions
	var dryRun bool
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Collect blobs no session, checkpoint, snapshot, workspace or edge holds, once their grace has passed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if grace < 0 {
				return fmt.Errorf("--grace must not be negative")
			}
			st, err := runGC(cmd.Context(), o, retention.Options{Grace: grace, DryRun: dryRun})
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(st)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data", envOr("CAIRN_DATA", ".cairn"), "embedded mode: the server's data directory (env CAIRN_DATA)")
	postgresFlag(cmd, &o.postgres, "hosted mode: PostgreSQL URL; every universe is collected")
	s3Flags(cmd, &o)
	f.BoolVar(&dryRun, "dry-run", false, "count what would be deleted without deleting")
	f.DurationVar(&grace, "grace", retention.DefaultGrace, "keep blobs put or admitted within this duration")
	return cmd
}

func runGC(ctx context.Context, o serveOptions, opt retention.Options) (retention.Stats, error) {
	col := &retention.Collector{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	if o.postgres == "" {
		if o.s3.Bucket != "" {
			return retention.Stats{}, fmt.Errorf("S3 object storage needs the hosted store: add --postgres URL")
		}
		if _, err := os.Stat(o.dataDir); err != nil {
			return retention.Stats{}, fmt.Errorf("no embedded store at %s: %w", o.dataDir, err)
		}
		st, err := sqlite.Open(ctx, filepath.Clean(o.dataDir))
		if err != nil {
			return retention.Stats{}, fmt.Errorf("opening store in %s: %w", o.dataDir, err)
		}
		defer st.Close()
		col.Universes = retention.Single(st.Universe(), st)
		return col.Collect(ctx, opt)
	}
	db, objects, err := openHostedStore(ctx, o)
	if err != nil {
		return retention.Stats{}, err
	}
	defer db.Close()
	col.Universes = func(ctx context.Context) ([]retention.Universe, error) {
		slugs, err := db.Universes(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]retention.Universe, 0, len(slugs))
		for _, slug := range slugs {
			s, err := db.Store(ctx, slug, objects)
			if err != nil {
				return nil, err
			}
			out = append(out, retention.Universe{Name: slug, Store: s})
		}
		return out, nil
	}
	return col.Collect(ctx, opt)
}
