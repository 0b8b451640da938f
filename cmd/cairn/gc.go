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

	"github.com/cairn-agents/cairn/objstore"
	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/store/postgres"
	"github.com/cairn-agents/cairn/store/sqlite"
)

// gcCommand runs one blob-collector pass over the store `serve` would open.
func gcCommand() *cobra.Command {
	var o serveOptions
	var dryRun, asJSON bool
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Collect blobs no session, checkpoint, snapshot, workspace or edge holds, once their grace has passed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if grace < 0 {
				return fmt.Errorf("--grace must not be negative")
			}
			opt := retention.Options{Grace: grace, DryRun: dryRun, CountStored: true}
			st, err := runGC(cmd.Context(), o, opt)
			if err != nil {
				return err
			}
			if !asJSON {
				printGCSummary(cmd.OutOrStdout(), st, opt)
				return nil
			}
			if st.LeaderBusy && st.UniversesScanned == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "another process (a server's background collector) is collecting; nothing was scanned")
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
	f.BoolVar(&asJSON, "json", false, "print the pass's figures as JSON")
	f.DurationVar(&grace, "grace", retention.DefaultGrace, "keep blobs put or admitted within this duration")
	return cmd
}

func runGC(ctx context.Context, o serveOptions, opt retention.Options) (retention.Stats, error) {
	if o.postgres == "" {
		// A server's own collector runs under its lock; this process must
		// not collect beside it.
		if _, err := os.Stat(o.dataDir); err != nil {
			return retention.Stats{}, fmt.Errorf("no embedded store at %s: %w", o.dataDir, err)
		}
		unlock, err := lockDataDir(o.dataDir)
		if err != nil {
			return retention.Stats{}, fmt.Errorf("%w; a running server collects its own directory (serve --gc-interval)", err)
		}
		defer unlock()
	}
	col, closeStore, err := openCollector(ctx, o, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		return retention.Stats{}, err
	}
	defer closeStore()
	return col.Collect(ctx, opt)
}

// openCollector opens, for `cairn gc` and the background collector of
// `cairn serve`, handles of its own on the store `serve` uses: the embedded
// store's one universe, collected in-process; or every universe of the
// hosted store, collected by whichever process holds the PostgreSQL leader
// lock. closeStore gives up the leadership and closes the handles.
func openCollector(ctx context.Context, o serveOptions, logger *slog.Logger) (col *retention.Collector, closeStore func(), err error) {
	col = &retention.Collector{Logger: logger}
	if o.postgres == "" {
		if o.s3.Bucket != "" {
			return nil, nil, fmt.Errorf("S3 object storage needs the hosted store: add --postgres URL")
		}
		if _, err := os.Stat(o.dataDir); err != nil {
			return nil, nil, fmt.Errorf("no embedded store at %s: %w", o.dataDir, err)
		}
		st, err := sqlite.Open(ctx, filepath.Clean(o.dataDir))
		if err != nil {
			return nil, nil, fmt.Errorf("opening store in %s: %w", o.dataDir, err)
		}
		col.Universes = retention.Single(st.Universe(), st)
		return col, func() { st.Close() }, nil
	}
	db, objects, err := openHostedStore(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	leader := db.Leader()
	col.Universes = hostedUniverses(db, objects)
	col.Leader = leader
	return col, func() {
		// Not the caller's context: it is usually cancelled by now, and the
		// next leader should not wait for the server to notice a dropped session.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := leader.Close(ctx); err != nil {
			logger.Warn("releasing the collector's leadership", "err", err)
		}
		db.Close()
	}, nil
}

// hostedUniverses lists every universe of the hosted store at each pass, so
// universes created while a server runs are collected too.
func hostedUniverses(db *postgres.DB, objects objstore.Store) func(context.Context) ([]retention.Universe, error) {
	return func(ctx context.Context) ([]retention.Universe, error) {
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
}
