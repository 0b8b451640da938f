package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/retention"
)

// DefaultGCInterval is the wait between the background collector's passes.
const DefaultGCInterval = time.Hour

// gcFlags configure the background blob collector of `cairn serve`.
type gcFlags struct {
	interval, grace time.Duration
}

func (g *gcFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&g.interval, "gc-interval", DefaultGCInterval, "wait between the background blob collector's passes; the first pass runs one interval after the start; 0 disables the collector (env CAIRN_GC_INTERVAL)")
	f.DurationVar(&g.grace, "gc-grace", retention.DefaultGrace, "background blob collector: keep blobs put or admitted within this duration; 0 disables the collector (env CAIRN_GC_GRACE)")
}

// resolve applies CAIRN_GC_INTERVAL and CAIRN_GC_GRACE to the flags not
// given on the command line, and validates both.
func (g gcFlags) resolve(cmd *cobra.Command) (gcFlags, error) {
	for _, v := range []struct {
		flag, env string
		dst       *time.Duration
	}{{"gc-interval", "CAIRN_GC_INTERVAL", &g.interval}, {"gc-grace", "CAIRN_GC_GRACE", &g.grace}} {
		if s := os.Getenv(v.env); s != "" && !cmd.Flags().Changed(v.flag) {
			d, err := time.ParseDuration(s)
			if err != nil {
				return g, fmt.Errorf("%s: %w", v.env, err)
			}
			*v.dst = d
		}
		if *v.dst < 0 {
			return g, fmt.Errorf("--%s must not be negative (0 disables the background collector)", v.flag)
		}
	}
	return g, nil
}

// startBackgroundGC starts the collector of `cairn serve` on handles of its
// own (see openCollector): in embedded mode it collects the SQLite store in
// this process; in hosted mode it collects every universe whenever this
// server holds the PostgreSQL leader lock, so servers sharing a database take
// turns rather than scanning side by side. stop ends the collector, waits for
// a pass in progress to give up, and releases the lock and the handles.
func startBackgroundGC(ctx context.Context, cmd *cobra.Command, o serveOptions, logger *slog.Logger, onPass func(retention.Stats, error)) (stop func(), err error) {
	g, err := o.gc.resolve(cmd)
	if err != nil {
		return nil, err
	}
	if g.interval == 0 || g.grace == 0 {
		logger.Info("background blob collector disabled", "interval", g.interval, "grace", g.grace)
		return func() {}, nil
	}
	col, closeStore, err := openCollector(ctx, o, logger)
	if err != nil {
		return nil, fmt.Errorf("background blob collector: %w", err)
	}
	col.OnPass = onPass
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		col.Run(ctx, g.interval, retention.Options{Grace: g.grace})
	}()
	logger.Info("background blob collector", "interval", g.interval, "grace", g.grace, "leaderLock", col.Leader != nil)
	return func() {
		cancel()
		<-done
		closeStore()
	}, nil
}
