package main

import (
	"context"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/assembly"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/replay"
	"github.com/cairn-agents/cairn/runtime"
)

// demoCassette holds the model's answers for the demo, in the Chat
// Completions wire format; it is embedded so the demo runs from anywhere.
//
//go:embed demo_cassette.json
var demoCassette []byte

// demoWorkspace is the Acorn repository the release editor works in: its
// prompts, its skill, its changelog. The demo writes it to the data directory
// and imports it the way `cairn vfs import` does.
//
//go:embed all:demo_workspace
var demoWorkspace embed.FS

const (
	demoSession       = "acorn-release-notes"
	demoWorkspaceName = "acorn"
	demoSkill         = "release-notes"
	demoRequest       = "Draft release notes for Acorn 2.0"
	demoSteering      = "Lead with the migration guide, and keep it short."
	demoFollowUp      = "Add a short thank-you to the contributors."
	demoNotes         = "/work/RELEASE_NOTES.md"
)

func demoCommand() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a recorded release-editor session end to end, offline, on the embedded store",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := dataDir
			if dir == "" {
				tmp, err := os.MkdirTemp("", "cairn-demo-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				dir = tmp
			}
			return runDemo(cmd.Context(), cmd.OutOrStdout(), dir)
		},
	}
	cmd.Flags().StringVar(&dataDir, "data", "", "keep the demo's data in this directory (default: a temporary one, removed afterwards)")
	return cmd
}

// runDemo plays the Acorn release-editor session through the real stack: the
// JSON-RPC API, the local host, the SQLite store and the Chat Completions
// adapter, with the cassette standing in for the network.
func runDemo(ctx context.Context, out io.Writer, dataDir string) error {
	cassette, err := replay.Parse(demoCassette)
	if err != nil {
		return fmt.Errorf("demo cassette: %w", err)
	}
	transport := replay.New(cassette)
	st, err := openStack(ctx, dataDir, hostOptions{
		resolver:  endpoint.Static{"openai": {BaseURL: "https://replay.cairn.invalid/v1"}},
		transport: transport,
		logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	defer st.close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: api.NewServer(st.host, api.ServerOptions{APIKinds: st.kinds}).Handler()}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	client := api.NewClient(ln.Addr().String(), nil)

	// While the model works on its first turn, the user steers: the steering
	// is durable at once but enters context only at the next turn boundary,
	// so the draft written in turn 2 follows it.
	var steerErr error
	transport.OnRequest = func(n int, _ []byte) {
		if n == 0 {
			_, steerErr = client.Steer(ctx, api.SteerParams{SessionID: demoSession, Input: []api.InputPart{{Type: "text", Text: demoSteering}}})
		}
	}

	fmt.Fprintln(out, "Cairn demo: the Acorn release editor")
	fmt.Fprintln(out, "RECORDED: model answers are replayed from a cassette embedded in this binary (Chat Completions wire format); no network is used.")
	fmt.Fprintf(out, "data: %s\n\n", dataDir)

	// The repository goes into a workspace; the session mounts it at /work
	// and may use the vfs_* tools on it. Its instructions come from the
	// workspace's .cairn/prompts, assembled when the first run starts.
	src := filepath.Join(dataDir, demoWorkspaceName)
	if err := writeDemoWorkspace(src); err != nil {
		return err
	}
	fmt.Fprintf(out, "$ cairn vfs import %s --workspace %s\n", src, demoWorkspaceName)
	if err := importDir(ctx, out, client, src, demoWorkspaceName, importOptions{}); err != nil {
		return err
	}
	var tools []string
	for _, t := range runtime.VFSTools() {
		tools = append(tools, t.Definition().Name)
	}
	if _, err := client.CreateSession(ctx, api.CreateSessionParams{
		SessionID: demoSession,
		Model:     core.ModelSelection{ProviderID: "openai", APIKind: core.APIChatCompletions, Model: "gpt-4o-mini"},
		Tools:     tools,
		Links:     []api.LinkParam{{Mount: "/work", Workspace: demoWorkspaceName}},
	}); err != nil {
		return err
	}
	fmt.Fprintf(out, "session %s: workspace %s mounted at /work, tools %s\n\n", demoSession, demoWorkspaceName, strings.Join(tools, ", "))
	runs := []chatOptions{{session: demoSession, skills: []string{demoSkill}}, {session: demoSession}}
	for i, msg := range []string{demoRequest, demoFollowUp} {
		if len(runs[i].skills) > 0 {
			fmt.Fprintf(out, "(skill %s is active for this run)\n", demoSkill)
		}
		run, err := runChat(ctx, out, client, runs[i], msg)
		if err != nil {
			return err
		}
		if steerErr != nil {
			return fmt.Errorf("steering: %w", steerErr)
		}
		if status := run.status; status != core.StatusCompleted {
			return fmt.Errorf("demo run ended %s", status)
		}
		fmt.Fprintln(out)
	}
	// The conversation is done; compacting it leaves instructions, the skill
	// catalog and a summary for whatever comes next. History keeps it all.
	fmt.Fprintf(out, "$ cairn context compact %s\n", demoSession)
	if err := compactSession(ctx, out, client, demoSession); err != nil {
		return err
	}
	fmt.Fprintln(out)
	if err := printNotes(ctx, out, client); err != nil {
		return err
	}
	if err := printInstructions(ctx, out, client); err != nil {
		return err
	}
	return printSummary(ctx, out, client, st)
}

// writeDemoWorkspace writes the embedded repository under dir.
func writeDemoWorkspace(dir string) error {
	root, err := fs.Sub(demoWorkspace, "demo_workspace")
	if err != nil {
		return err
	}
	return os.CopyFS(dir, root)
}

// printNotes shows the file the model wrote, read back from the workspace.
func printNotes(ctx context.Context, out io.Writer, c *api.Client) error {
	ws, err := c.ReadWorkspace(ctx, demoWorkspaceName)
	if err != nil {
		return err
	}
	f, err := c.ReadFile(ctx, api.FileParams{Workspace: demoWorkspaceName, Path: strings.TrimPrefix(demoNotes, "/work")})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "workspace %s is at revision %d; %s (%d bytes):\n%s\n", demoWorkspaceName, ws.Revision, demoNotes, f.Size, indent(strings.TrimRight(string(f.Data), "\n")))
	return nil
}

// printInstructions shows where the session's instructions came from: the
// instruction entry's provenance is the stored assembly report.
func printInstructions(ctx context.Context, out io.Writer, c *api.Client) error {
	cx, err := c.ReadContext(ctx, demoSession)
	if err != nil {
		return err
	}
	for _, e := range cx.Entries {
		if e.Kind != core.EntryInstructions || e.ProvenanceRef == nil {
			continue
		}
		data, err := c.Get(ctx, e.ProvenanceRef.Digest)
		if err != nil {
			return err
		}
		report, err := assembly.ParseReport(data)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "instructions %s (entry %s) were assembled from workspace %s; report %s:\n", e.Key, e.ID, report.Workspace, e.ProvenanceRef.Digest)
		for _, s := range report.Sources {
			fmt.Fprintf(out, "  %s (%d bytes, included: %t)\n", s.Path, s.Size, s.Included)
		}
		for _, w := range report.Warnings {
			fmt.Fprintf(out, "  warning: %s: %s\n", w.Path, w.Message)
		}
	}
	return nil
}

func printSummary(ctx context.Context, out io.Writer, c *api.Client, st *stack) error {
	sess, err := c.ReadSession(ctx, demoSession)
	if err != nil {
		return err
	}
	cx, err := c.ReadContext(ctx, demoSession)
	if err != nil {
		return err
	}
	usage, err := st.store.Usage(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "summary: session %s, %d events, %d context entries (revision %d), %d blobs, %d bytes\n",
		demoSession, sess.Head, len(cx.Entries), cx.Revision, usage.Blobs, usage.Bytes)
	return nil
}
