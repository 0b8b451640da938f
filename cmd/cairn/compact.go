package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// contextCompactCommand is `cairn context compact SESSION`: the manual
// compaction trigger, followed until the compaction ends.
func contextCompactCommand() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "compact SESSION",
		Short: "Compact a session's conversation now and wait for the result",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return compactSession(cmd.Context(), cmd.OutOrStdout(), cf.client(), args[0])
		},
	}
	cf.register(cmd)
	return cmd
}

func compactSession(ctx context.Context, out io.Writer, c *api.Client, session string) error {
	before, err := c.ReadSession(ctx, session)
	if err != nil {
		return err
	}
	res, err := c.CompactContext(ctx, session)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "compaction %s of context revision %d requested\n", res.CompactionID, res.Revision)
	after := before.Head
	for {
		page, err := c.ReadEvents(ctx, api.EventsReadParams{SessionID: session, After: after, WaitMs: 10_000})
		if err != nil {
			return err
		}
		for _, ev := range page.Events {
			after = ev.Seq
			switch ev.Kind {
			case core.KindContextCompacted:
				var p core.ContextCompacted
				if json.Unmarshal(ev.Payload, &p) == nil && p.CompactionID == res.CompactionID {
					fmt.Fprintf(out, "replaced %d entries with %d\n", len(p.Removed), len(p.Entries))
				}
			case core.KindCompactionCompleted:
				var p core.CompactionCompleted
				if json.Unmarshal(ev.Payload, &p) == nil && p.CompactionID == res.CompactionID {
					cx, err := c.ReadContext(ctx, session)
					if err != nil {
						return err
					}
					fmt.Fprintf(out, "compaction completed: context revision %d, %d entries\n", cx.Revision, len(cx.Entries))
					return nil
				}
			case core.KindCompactionFailed:
				var p core.CompactionFailed
				if json.Unmarshal(ev.Payload, &p) == nil && p.CompactionID == res.CompactionID {
					return fmt.Errorf("compaction failed (%s): %s; the context is unchanged", p.Error.Kind, p.Error.Message)
				}
			}
		}
	}
}
