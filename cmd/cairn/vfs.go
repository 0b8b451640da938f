package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/vfs"
)

func vfsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "vfs",
		Short: "Import, export and inspect a server's workspaces and snapshots",
	}
	cmd.AddCommand(vfsImportCommand(), vfsDiffCommand(), vfsExportCommand(), vfsWorkspacesCommand(), vfsCatCommand(), vfsSnapshotCommand())
	return cmd
}

func vfsImportCommand() *cobra.Command {
	var cf clientFlags
	var workspace string
	var f importFlags
	cmd := &cobra.Command{
		Use:   "import DIR --workspace NAME",
		Short: "Commit DIR's files to a workspace (creating it if absent), uploading only what the server lacks",
		Long: "Commit DIR's files to a workspace (creating it if absent), uploading only what the server lacks.\n" +
			"Files only in the workspace (an agent's work) are kept and listed; --delete removes them instead.\n" +
			"`cairn vfs diff DIR --workspace NAME` shows what an import would do.\n" +
			"Git metadata (.git) is never imported. A symlink to a file inside DIR is imported as that file's bytes;\n" +
			"other symlinks (outside DIR, to a directory, dangling) are skipped. Every skipped path is reported.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt, err := f.options(cmd)
			if err != nil {
				return err
			}
			return importDir(cmd.Context(), cmd.OutOrStdout(), cf.client(), args[0], workspace, opt)
		},
	}
	cf.register(cmd)
	f.register(cmd)
	cmd.Flags().StringVar(&workspace, "workspace", "", "workspace to commit DIR into")
	cmd.Flags().Int64Var(&f.expected, "expected-revision", 0, "refuse unless the workspace is at this revision (0: refuse unless it is absent)")
	_ = cmd.MarkFlagRequired("workspace")
	return cmd
}

func vfsDiffCommand() *cobra.Command {
	var cf clientFlags
	var workspace string
	var f importFlags
	cmd := &cobra.Command{
		Use:   "diff DIR --workspace NAME",
		Short: "Show what `vfs import` of DIR would change in a workspace",
		Long: "Show what `vfs import` of DIR would change in a workspace, one path per line:\n" +
			"+ only in DIR (added), ~ in both with other bytes (replaced), - only in the workspace and removed\n" +
			"(with --delete), = only in the workspace and kept. Nothing is uploaded or changed.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt, err := f.options(cmd)
			if err != nil {
				return err
			}
			c := cf.client()
			p, _, err := planDir(cmd.Context(), c, args[0], workspace, opt)
			if err != nil {
				return err
			}
			printDiff(cmd.OutOrStdout(), p.plan)
			return nil
		},
	}
	cf.register(cmd)
	f.register(cmd)
	cmd.Flags().StringVar(&workspace, "workspace", "", "workspace to compare DIR with")
	_ = cmd.MarkFlagRequired("workspace")
	return cmd
}

// importFlags are the flags import and diff share.
type importFlags struct {
	ignoreFile string
	del        bool
	expected   int64
}

func (f *importFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.ignoreFile, "ignore-file", "", "leave out the paths this file's patterns match (gitignore syntax, relative to DIR), e.g. DIR/.gitignore")
	cmd.Flags().BoolVar(&f.del, "delete", false, "remove the workspace's files that DIR lacks (except paths the import leaves out)")
}

func (f *importFlags) options(cmd *cobra.Command) (importOptions, error) {
	opt := importOptions{delete: f.del}
	if fl := cmd.Flags().Lookup("expected-revision"); fl != nil && fl.Changed {
		if f.expected < 0 {
			return opt, fmt.Errorf("--expected-revision must not be negative")
		}
		opt.expected = &f.expected
	}
	if f.ignoreFile != "" {
		data, err := os.ReadFile(f.ignoreFile)
		if err != nil {
			return opt, fmt.Errorf("--ignore-file: %w", err)
		}
		opt.vfs.Ignore = vfs.ParseIgnore(data)
	}
	return opt, nil
}

type importOptions struct {
	vfs      vfs.ImportOptions
	delete   bool
	expected *int64 // --expected-revision
}

// hashOnly is a blob store that only names bytes, so import can compute
// every ref with vfs.ImportDir without holding the tree in memory.
type hashOnly struct{}

func (hashOnly) Put(_ context.Context, data []byte) (content.Digest, error) {
	return content.Sum(data), nil
}
func (hashOnly) Get(_ context.Context, d content.Digest) ([]byte, error) {
	return nil, &blob.NotFoundError{Digest: d}
}
func (hashOnly) Missing(context.Context, []content.Digest) ([]content.Digest, error) { return nil, nil }
func (hashOnly) Touch(context.Context, []content.Digest) ([]content.Digest, error)   { return nil, nil }
func (hashOnly) Usage(context.Context) (blob.Usage, error)                           { return blob.Usage{}, nil }

// noEdges drops the retention edges ImportDir records; the server records
// its own when the tree is committed.
type noEdges struct{}

func (noEdges) PutEdges(context.Context, content.Digest, []content.Digest) error { return nil }

// dirPlan is an import's plan with what it was made from.
type dirPlan struct {
	plan     importPlan
	local    vfs.Manifest // DIR's files
	exists   bool         // the workspace exists
	revision int64        // the workspace's revision (0 when absent)
}

// planDir reads dir and the workspace's head and plans the import.
func planDir(ctx context.Context, c *api.Client, dir, workspace string, opt importOptions) (dirPlan, []vfs.Skipped, error) {
	m, _, skipped, err := vfs.ImportDir(ctx, hashOnly{}, noEdges{}, dir, opt.vfs)
	if err != nil {
		return dirPlan{}, nil, err
	}
	d := dirPlan{local: m}
	var remote []vfs.Entry
	switch cur, err := c.ReadWorkspace(ctx, workspace); {
	case err == nil:
		d.exists, d.revision = true, cur.Revision
		data, err := c.Get(ctx, cur.Head.Ref.Digest)
		if err != nil {
			return dirPlan{}, nil, err
		}
		head, err := vfs.ParseManifest(data)
		if err != nil {
			return dirPlan{}, nil, err
		}
		remote = head.Files
	case !isKind(err, api.KindNotFound):
		return dirPlan{}, nil, err
	}
	d.plan, err = planImport(m.Files, remote, skipped, opt.delete)
	return d, skipped, err
}

// importDir commits dir's tree to workspace on the revision it read (or the
// one --expected-revision names), so a concurrent change on the server is a
// conflict, never overwritten.
func importDir(ctx context.Context, out io.Writer, c *api.Client, dir, workspace string, opt importOptions) error {
	d, skipped, err := planDir(ctx, c, dir, workspace, opt)
	if err != nil {
		return err
	}
	reportSkipped(out, skipped)
	expected := d.revision
	if opt.expected != nil {
		// Checked here too, before any upload; the commit checks it again.
		if *opt.expected != d.revision {
			state := fmt.Sprintf("is at revision %d", d.revision)
			if !d.exists {
				state = "does not exist"
			}
			return fmt.Errorf("workspace %s %s, not %d (--expected-revision): nothing imported; `cairn vfs diff` shows what changed", workspace, state, *opt.expected)
		}
		expected = *opt.expected
	}
	if d.exists && d.plan.unchanged() {
		fmt.Fprintf(out, "workspace %s already holds %s at revision %d\n", workspace, dir, d.revision)
		reportKeptAndRemoved(out, d.plan)
		return nil
	}
	m := d.local
	res, err := c.MissingBlobs(ctx, vfs.FileDigests(m))
	if err != nil {
		return err
	}
	missing := map[content.Digest]bool{}
	for _, d := range res.Missing {
		missing[d] = true
	}
	var uploaded, uploadedBytes, reused, reusedBytes int64
	for _, e := range m.Files {
		if !missing[e.Ref.Digest] {
			reused++
			reusedBytes += e.Size
			continue
		}
		delete(missing, e.Ref.Digest) // a file's twin reuses its upload
		// A symlinked entry reads its target again; the digest check below
		// refuses bytes other than those imported, wherever it points now.
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(e.Path)))
		if err != nil {
			return err
		}
		if content.Sum(data) != e.Ref.Digest {
			return fmt.Errorf("%s changed during the import; run it again", e.Path)
		}
		put, err := c.PutBlob(ctx, data, e.Ref.MediaType)
		if err != nil {
			return fmt.Errorf("uploading %s (%d bytes): %w", e.Path, e.Size, err)
		}
		if put.Ref.Digest != e.Ref.Digest {
			return fmt.Errorf("uploading %s: server stored %s, want %s", e.Path, put.Ref.Digest, e.Ref.Digest)
		}
		uploaded++
		uploadedBytes += e.Size
	}
	done, err := c.CommitWorkspace(ctx, api.WorkspaceCommitParams{Workspace: workspace, ExpectedRevision: &expected, Files: d.plan.files})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "workspace %s revision %d: %d files, %d bytes\n", done.Workspace, done.Revision, done.Files, done.Bytes)
	fmt.Fprintf(out, "uploaded %d new blobs (%d bytes), reused %d files (%d bytes)\n", uploaded, uploadedBytes, reused, reusedBytes)
	reportKeptAndRemoved(out, d.plan)
	return nil
}

// reportSkipped names every path the import left out, except ignored ones,
// which it counts (the user listed them).
func reportSkipped(out io.Writer, skipped []vfs.Skipped) {
	ignored := 0
	for _, s := range skipped {
		if s.Reason == vfs.SkipIgnored {
			ignored++
			continue
		}
		fmt.Fprintf(out, "skipped %s: %s\n", s.Path, s.Reason)
	}
	if ignored > 0 {
		fmt.Fprintf(out, "skipped %d paths matched by --ignore-file\n", ignored)
	}
}

func isKind(err error, kind string) bool {
	var rpcErr *api.Error
	return errors.As(err, &rpcErr) && rpcErr.Kind() == kind
}

// treeFlags name exactly one of a workspace and a snapshot.
type treeFlags struct{ workspace, snapshot string }

// snapshotRef is --snapshot as a param; nil without it.
func (f treeFlags) snapshotRef() (*api.RefParam, error) {
	if f.snapshot == "" {
		return nil, nil
	}
	d, err := content.ParseDigest(f.snapshot)
	if err != nil {
		return nil, fmt.Errorf("--snapshot: %w", err)
	}
	r := api.DigestRef(d)
	return &r, nil
}

func (f *treeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.workspace, "workspace", "", "workspace (its current head)")
	cmd.Flags().StringVar(&f.snapshot, "snapshot", "", "snapshot digest (sha256:…)")
	cmd.MarkFlagsOneRequired("workspace", "snapshot")
	cmd.MarkFlagsMutuallyExclusive("workspace", "snapshot")
}

func vfsExportCommand() *cobra.Command {
	var cf clientFlags
	var tf treeFlags
	var force bool
	cmd := &cobra.Command{
		Use:   "export (--workspace NAME | --snapshot DIGEST) DIR",
		Short: "Write every file of a workspace or snapshot under DIR",
		Long: "Write every file of a workspace or snapshot under DIR, all or nothing: on any failure DIR is left as it was.\n" +
			"Paths under .git are never written (they are reported). A symlink in DIR is never followed nor replaced:\n" +
			"a tree path through or onto one is refused before anything is written.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exportTree(cmd.Context(), cmd.OutOrStdout(), cf.client(), tf, args[0], force)
		},
	}
	cf.register(cmd)
	tf.register(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "write into a non-empty DIR, replacing regular files of the same paths (others stay)")
	return cmd
}

func exportTree(ctx context.Context, out io.Writer, c *api.Client, tf treeFlags, dir string, force bool) error {
	entries, err := listTree(ctx, c, tf)
	if err != nil {
		return err
	}
	// Re-check every path (and the 255-byte name rule) before anything is
	// written: a server must not make this write outside dir, nor fail
	// halfway on a name the file system refuses.
	m, err := vfs.NewManifest(entries, vfs.Limits{})
	if err != nil {
		return fmt.Errorf("the tree cannot be exported: %w", err)
	}
	var files []vfs.Entry
	var paths, gitTops []string
	var bytes int64
	for _, e := range m.Files {
		if vfs.IsGitPath(e.Path) {
			if t := gitTop(e.Path); len(gitTops) == 0 || gitTops[len(gitTops)-1] != t {
				gitTops = append(gitTops, t)
			}
			continue
		}
		files = append(files, e)
		paths = append(paths, e.Path)
		bytes += e.Size
	}
	x, err := openExport(dir, force)
	if err != nil {
		return err
	}
	defer x.abort()
	if err := x.plan(paths); err != nil {
		return err
	}
	for _, e := range files {
		data, err := c.Get(ctx, e.Ref.Digest)
		if err != nil {
			return fmt.Errorf("reading %s: %w", e.Path, err)
		}
		if content.Sum(data) != e.Ref.Digest || int64(len(data)) != e.Size {
			return fmt.Errorf("the server sent bytes for %s that do not match its entry", e.Path)
		}
		if err := x.write(e.Path, data); err != nil {
			return fmt.Errorf("writing %s: %w", e.Path, err)
		}
	}
	if err := x.install(paths); err != nil {
		return err
	}
	for _, t := range gitTops {
		fmt.Fprintf(out, "skipped %s: git metadata is never exported\n", t)
	}
	fmt.Fprintf(out, "exported %d files (%d bytes) to %s\n", len(files), bytes, dir)
	return nil
}

// listTree returns the file entries of a snapshot, or of a workspace's head
// manifest (read as a blob, so no snapshot is recorded just to export).
func listTree(ctx context.Context, c *api.Client, tf treeFlags) ([]vfs.Entry, error) {
	if snap, err := tf.snapshotRef(); err != nil || snap != nil {
		if err != nil {
			return nil, err
		}
		r, err := c.ReadSnapshot(ctx, *snap)
		return r.Files, err
	}
	w, err := c.ReadWorkspace(ctx, tf.workspace)
	if err != nil {
		return nil, err
	}
	data, err := c.Get(ctx, w.Head.Ref.Digest)
	if err != nil {
		return nil, err
	}
	m, err := vfs.ParseManifest(data)
	return m.Files, err
}

func vfsWorkspacesCommand() *cobra.Command {
	var cf clientFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "workspaces",
		Short: "List workspaces",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := cf.client()
			all := []api.WorkspaceInfo{}
			for {
				after := ""
				if len(all) > 0 {
					after = all[len(all)-1].Workspace
				}
				page, err := c.ListWorkspaces(cmd.Context(), api.WorkspaceListParams{After: after})
				if err != nil {
					return err
				}
				if len(page.Workspaces) == 0 {
					break
				}
				all = append(all, page.Workspaces...)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), api.WorkspaceListResult{Workspaces: all})
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "WORKSPACE\tREVISION\tHEAD\tUPDATED")
			for _, ws := range all {
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", ws.Workspace, ws.Revision, ws.Head.Ref.Digest, time.UnixMilli(ws.UpdatedAtMs).UTC().Format(time.RFC3339))
			}
			return w.Flush()
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func vfsCatCommand() *cobra.Command {
	var cf clientFlags
	var tf treeFlags
	cmd := &cobra.Command{
		Use:   "cat (--workspace NAME | --snapshot DIGEST) PATH",
		Short: "Print a file of a workspace or snapshot",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			snap, err := tf.snapshotRef()
			if err != nil {
				return err
			}
			r, err := cf.client().ReadFile(cmd.Context(), api.FileParams{Workspace: tf.workspace, Snapshot: snap, Path: args[0]})
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(r.Data)
			return err
		},
	}
	cf.register(cmd)
	tf.register(cmd)
	return cmd
}

func vfsSnapshotCommand() *cobra.Command {
	var cf clientFlags
	var workspace string
	cmd := &cobra.Command{
		Use:   "snapshot --workspace NAME",
		Short: "Record a workspace's current tree as a snapshot and print its digest",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := cf.client().CreateSnapshot(cmd.Context(), workspace)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "snapshot %s of workspace %s: %d files, %d bytes\n", r.Snapshot.Digest, workspace, r.Files, r.Bytes)
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVar(&workspace, "workspace", "", "workspace to snapshot")
	_ = cmd.MarkFlagRequired("workspace")
	return cmd
}
