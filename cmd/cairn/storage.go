package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

func storageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "storage",
		Short: "Report where a universe's blob bytes go, and what keeps a blob",
	}
	cmd.AddCommand(storageReportCommand(), storageHoldersCommand())
	return cmd
}

func storageReportCommand() *cobra.Command {
	var cf clientFlags
	var session, after string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Print logical against physical bytes, for the universe and per session",
		Long: `Print the storage report of the server's universe (the API key's, on a hosted server).

PHYSICAL counts each stored blob once, split by where its body lives: inline
in the catalog, or in object storage. LOGICAL counts each blob once per
session whose events reference it, however many of its events do; a fork
counts only its own events' references. Per session, SHARED is the part of
its references another session also makes, and CHECKPOINTS its reducer
checkpoints. Sessions are listed by id, a page at a time (--after pages on);
--session reports one session without the universe totals.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			report, err := cf.client().StorageReport(cmd.Context(), api.StorageReportParams{SessionID: session, After: after, Limit: limit})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, report)
			}
			return printStorageReport(out, report)
		},
	}
	cf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&session, "session", "", "report this session only")
	f.StringVar(&after, "after", "", "list the sessions after this id (the cursor a page prints)")
	f.IntVar(&limit, "limit", 0, "sessions per page (default 100, at most 1000)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON ({universe?, sessions, cursor?})")
	return cmd
}

func storageHoldersCommand() *cobra.Command {
	var cf clientFlags
	var grace time.Duration
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "holders REF",
		Short: "Print what holds a blob, its last touch, and when it becomes eligible for collection",
		Long: `Print what keeps a blob (sha256:<hex>) from the collector: the sessions that
reference it, reducer checkpoints, a snapshot record, workspace heads, parent
blobs whose format embeds it, and the constant pin. ELIGIBLE is its last
touch plus the server's --gc-grace, or --grace when given; an unheld blob
is collected by the first pass after it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := content.ParseDigest(args[0])
			if err != nil {
				return fmt.Errorf("REF: %w", err)
			}
			if grace < 0 {
				return fmt.Errorf("--grace must not be negative")
			}
			p := api.BlobHoldersParams{Ref: api.DigestRef(d), Limit: limit}
			if cmd.Flags().Changed("grace") {
				ms := grace.Milliseconds()
				p.GraceMs = &ms
			}
			h, err := cf.client().BlobHolders(cmd.Context(), p)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, h)
			}
			return printHolders(out, h)
		},
	}
	cf.register(cmd)
	f := cmd.Flags()
	f.DurationVar(&grace, "grace", 0, "the grace to compute eligibility with (default: the server's --gc-grace)")
	f.IntVar(&limit, "limit", 0, "entries per holder list (default 100, at most 1000)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func printStorageReport(w io.Writer, r api.StorageReportResult) error {
	if u := r.Universe; u != nil {
		ratio := "-"
		if u.PhysicalBytes > 0 {
			ratio = fmt.Sprintf("%.2fx", float64(u.LogicalBytes)/float64(u.PhysicalBytes))
		}
		rows := [][2]string{
			{"blobs", fmt.Sprintf("%d (inline %d, object %d)", u.Blobs, u.InlineBlobs, u.ObjectBlobs)},
			{"physical", fmt.Sprintf("%s (inline %s, object %s)", storageSize(u.PhysicalBytes), storageSize(u.InlineBytes), storageSize(u.ObjectBytes))},
			{"logical", fmt.Sprintf("%s in %d references from %d sessions", storageSize(u.LogicalBytes), u.Roots, u.Sessions)},
			{"logical/physical", ratio},
			{"checkpoints", fmt.Sprintf("%d (%s)", u.Checkpoints, storageSize(u.CheckpointBytes))},
			{"events", fmt.Sprintf("%d (%s)", u.Events, storageSize(u.EventBytes))},
		}
		if err := printStorageFacts(w, "UNIVERSE", rows); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if len(r.Sessions) == 0 {
		_, err := fmt.Fprintln(w, "no sessions")
		return err
	}
	var rows [][]string
	for _, s := range r.Sessions {
		rows = append(rows, storageSessionRow(s))
	}
	if err := printStorageColumns(w, []string{"SESSION", "ROOTS", "LOGICAL", "SHARED", "OWN", "CHECKPOINTS", "EVENTS"}, rows); err != nil {
		return err
	}
	if r.Cursor != "" {
		_, err := fmt.Fprintf(w, "(more sessions: cairn storage report --after %s)\n", r.Cursor)
		return err
	}
	return nil
}

func storageSessionRow(s store.SessionUsage) []string {
	return []string{
		s.SessionID,
		strconv.FormatInt(s.Roots, 10),
		storageSize(s.LogicalBytes),
		storageSize(s.SharedBytes),
		storageSize(s.LogicalBytes - s.SharedBytes),
		fmt.Sprintf("%d (%s)", s.Checkpoints, storageSize(s.CheckpointBytes)),
		fmt.Sprintf("%d (%s)", s.Events, storageSize(s.EventBytes)),
	}
}

func printHolders(w io.Writer, h api.BlobHoldersResult) error {
	state := "unheld, kept until eligible"
	switch {
	case h.Held:
		state = "held"
	case h.Collectable:
		state = "unheld and eligible: the next pass collects it"
	}
	rows := [][2]string{
		{"size", fmt.Sprintf("%s (%s)", storageSize(h.Size), h.Storage)},
		{"touched", time.UnixMilli(h.TouchedAtMs).UTC().Format(time.RFC3339)},
		{"eligible", fmt.Sprintf("%s (grace %s)", time.UnixMilli(h.EligibleAtMs).UTC().Format(time.RFC3339), time.Duration(h.GraceMs)*time.Millisecond)},
		{"state", state},
	}
	if h.Constant {
		rows = append(rows, [2]string{"constant", "pinned: never collected"})
	}
	rows = append(rows,
		[2]string{"sessions", storageHolderList(h.Sessions, h.SessionsTruncated)},
		[2]string{"checkpoints", storageHolderList(storageCheckpointNames(h.Checkpoints), h.CheckpointsTruncated)},
		[2]string{"snapshot", strconv.FormatBool(h.Snapshot)},
		[2]string{"workspaces", storageHolderList(h.Workspaces, h.WorkspacesTruncated)},
		[2]string{"parents", storageHolderList(storageDigestNames(h.Parents), h.ParentsTruncated)},
	)
	return printStorageFacts(w, h.Ref.Digest.String(), rows)
}

func storageCheckpointNames(cps []store.CheckpointHolder) []string {
	out := make([]string, len(cps))
	for i, c := range cps {
		out[i] = fmt.Sprintf("%s@%d", c.SessionID, c.Seq)
	}
	return out
}

func storageDigestNames(refs []content.ContentRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Digest.String()
	}
	return out
}

func storageHolderList(items []string, truncated bool) string {
	if len(items) == 0 {
		return "-"
	}
	s := strings.Join(items, ", ")
	if truncated {
		s += ", … (more; raise --limit)"
	}
	return s
}

// printStorageFacts prints a heading line, then "  key  value" rows aligned.
func printStorageFacts(w io.Writer, heading string, rows [][2]string) error {
	var buf strings.Builder
	buf.WriteString(heading + "\n") // outside the columns: a ref is wider than any key
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeStorageLines(w, buf.String())
}

// printStorageColumns prints a header row and rows as aligned columns.
func printStorageColumns(w io.Writer, header []string, rows [][]string) error {
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeStorageLines(w, buf.String())
}

// writeStorageLines writes text without the padding tabwriter leaves at line ends.
func writeStorageLines(w io.Writer, text string) error {
	for line := range strings.Lines(text) {
		if _, err := fmt.Fprintln(w, strings.TrimRight(line, " \n")); err != nil {
			return err
		}
	}
	return nil
}

// storageSize is n bytes in binary units, exact below 1 KiB: "812 B",
// "3.4 KiB", "1.2 GiB".
func storageSize(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
