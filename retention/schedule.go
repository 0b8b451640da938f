package retention

import (
	"context"
	"log/slog"
	"time"
)

// Run collects in the background until ctx ends: it waits interval, runs a
// pass, logs its stats, and waits interval again. The first pass comes one
// interval after the start, not at it, so a server restarting in a loop does
// not rescan its catalogs each time (`cairn gc` runs a pass on demand). The
// wait counts from the end of a pass, so a slow pass never queues another.
// A failed pass is logged and retried at the next interval. An interval of
// zero or less runs nothing.
func (c *Collector) Run(ctx context.Context, interval time.Duration, opt Options) {
	if interval <= 0 {
		return
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		st, err := c.Collect(ctx, opt)
		if c.OnPass != nil && ctx.Err() == nil && !(err == nil && st.LeaderBusy && st.UniversesScanned == 0) {
			c.OnPass(st, err)
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Error("retention: pass failed", "err", err)
		case st.LeaderBusy && st.UniversesScanned == 0:
			log.Debug("retention: another process leads the collector")
		default:
			log.Info("retention: pass",
				"took", time.Since(start).Round(time.Millisecond),
				"universes", st.UniversesScanned, "scanned", st.RowsScanned,
				"candidates", st.Candidates, "deleted", st.RowsDeleted,
				"bytesFreed", st.BytesFreed, "objectsDeleted", st.ObjectsDeleted,
				"objectErrors", st.ObjectErrors, "holderConflicts", st.HolderConflicts,
				"leaderBusy", st.LeaderBusy)
		}
		t.Reset(interval)
	}
}
