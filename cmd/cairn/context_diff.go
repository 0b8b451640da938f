package main

import (
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
)

// contextDiffCommand is `cairn context diff SESSION FROM TO`.
func contextDiffCommand() *cobra.Command {
	var cf clientFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff SESSION FROM TO",
		Short: "List the context entries added, removed and superseded by the events after FROM through TO",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			from, err1 := strconv.ParseInt(args[1], 10, 64)
			to, err2 := strconv.ParseInt(args[2], 10, 64)
			if err1 != nil || err2 != nil {
				return fmt.Errorf("FROM and TO are event seqs (integers)")
			}
			d, err := cf.client().DiffContext(cmd.Context(), api.ContextDiffParams{SessionID: args[0], FromSeq: from, ToSeq: to})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), d)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "context changes after seq %d through %d: %d added, %d removed, %d superseded\n", d.FromSeq, d.ToSeq, len(d.Added), len(d.Removed), len(d.Superseded))
			fmt.Fprintln(w, "SEQ\tCHANGE\tENTRY\tKIND\tPREVIEW")
			for _, c := range d.Added {
				fmt.Fprintf(w, "%d\t+ added\t%s\t%s\t%s\n", c.Seq, c.Entry.ID, c.Entry.Kind, oneLine(c.Entry.Preview, 60))
			}
			for _, c := range d.Superseded {
				fmt.Fprintf(w, "%d\t~ superseded by %s\t%s\t%s\t%s\n", c.Seq, c.By, c.Entry.ID, c.Entry.Kind, oneLine(c.Entry.Preview, 60))
			}
			for _, c := range d.Removed {
				fmt.Fprintf(w, "%d\t- removed\t%s\t%s\t%s\n", c.Seq, c.Entry.ID, c.Entry.Kind, oneLine(c.Entry.Preview, 60))
			}
			return w.Flush()
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
