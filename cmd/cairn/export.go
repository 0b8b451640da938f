package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/archive"
)

// exportCommand writes an archive of sessions and workspaces (docs/archive.md).
func exportCommand() *cobra.Command {
	var cf clientFlags
	var out string
	var p api.ExportParams
	cmd := &cobra.Command{
		Use:   "export --out FILE [--session ID]... [--workspace NAME]...",
		Short: "Write sessions and workspaces to an archive another server can import",
		Long: "Write an archive (docs/archive.md) of the named sessions, with the workspaces they link, and of the\n" +
			"named workspaces. With neither, the whole universe: every session, fork and workspace. Each session\n" +
			"is taken at its head as the export reaches it; a run in progress is taken up to its last committed\n" +
			"event. The archive holds no credentials. `--out -` writes to stdout.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return errors.New("--out FILE is required (- for stdout)")
			}
			c := cf.client()
			if out == "-" {
				_, err := c.Export(cmd.Context(), p, cmd.OutOrStdout())
				return err
			}
			// Written beside FILE and renamed at the end: a cut export
			// never leaves a FILE that looks whole.
			f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*.partial")
			if err != nil {
				return fmt.Errorf("cannot write %s: %w", out, errors.Unwrap(err))
			}
			defer os.Remove(f.Name())
			n, err := c.Export(cmd.Context(), p, f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			m, err := readManifest(f.Name())
			if err != nil {
				return err
			}
			if err := os.Rename(f.Name(), out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "exported %d sessions, %d workspaces and %d blobs to %s (%s)\n",
				len(m.Sessions), len(m.Workspaces), len(m.Blobs), out, storageSize(n))
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVar(&out, "out", "", "the archive to write (- for stdout)")
	cmd.Flags().StringArrayVar(&p.Sessions, "session", nil, "a session to export (repeatable; default: all)")
	cmd.Flags().StringArrayVar(&p.Workspaces, "workspace", nil, "a workspace to export (repeatable; default: all)")
	return cmd
}

// readManifest reads the manifest of an archive file.
func readManifest(path string) (archive.Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return archive.Manifest{}, err
	}
	defer f.Close()
	r, err := archive.NewReader(f, archive.DefaultLimits)
	if err != nil {
		return archive.Manifest{}, err
	}
	defer r.Close()
	return r.Manifest, nil
}

// importCommand reads an archive into the server's universe.
func importCommand() *cobra.Command {
	var cf clientFlags
	var asJSON, newIDs bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Read an archive written by cairn export into this server's universe",
		Long: "Read an archive written by `cairn export` (FILE, or - for stdin) into the server's universe, keeping\n" +
			"session ids and workspace names. Blobs the server already holds are not sent again. The archive is\n" +
			"checked in full first (every blob against its digest, every session's events for gaps, every ref);\n" +
			"a damaged archive, or a session id the server already has, is refused and no session or workspace\n" +
			"appears. --new-ids gives every imported session a fresh id instead.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var in io.Reader = cmd.InOrStdin()
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			res, err := cf.client().Import(cmd.Context(), in, newIDs)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, res)
			}
			for _, s := range res.Sessions {
				if s.From == s.To {
					fmt.Fprintf(out, "session %s\n", s.To)
				} else {
					fmt.Fprintf(out, "session %s (was %s)\n", s.To, s.From)
				}
			}
			for _, w := range res.Workspaces {
				note := ""
				if w.Reused {
					note = " (already here at the same head)"
				}
				fmt.Fprintf(out, "workspace %s%s\n", w.Name, note)
			}
			fmt.Fprintf(out, "sent %d blobs (%s); %d were here already\n", res.Blobs, storageSize(res.Bytes), res.Skipped)
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {sessions:[{from,to}], workspaces, blobs, bytes, skipped}")
	cmd.Flags().BoolVar(&newIDs, "new-ids", false, "give every imported session a fresh id (fork lineage follows)")
	return cmd
}
