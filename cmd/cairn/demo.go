package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/replay"
	"github.com/cairn-agents/cairn/runtime"
)

// demoCassette holds the model's answers for the demo, in the Chat
// Completions wire format; it is embedded so the demo runs from anywhere.
//
//go:embed demo_cassette.json
var demoCassette []byte

const (
	demoSession      = "acorn-release-notes"
	demoInstructions = "You are a release editor. Write accurate, concise release notes in Markdown. Use read_changelog for the facts; never invent features."
	demoRequest      = "Draft release notes for Acorn 2.0"
	demoSteering     = "Lead with the migration guide, and keep it short."
	demoFollowUp     = "Add a short thank-you to the contributors."
)

// demoChangelog is what the demo's read_changelog tool returns.
const demoChangelog = `Acorn 2.0 changelog
- feat: incremental builds skip unchanged modules (typical rebuild 40 s -> 6 s)
- feat: acorn.toml replaces acorn.json; acorn.json still read with a deprecation warning
- feat: Plugin API v2: plugins declare inputs so results can be cached
- fix: watcher missed renames on macOS (#1182)
- fix: acorn test --filter now matches nested test names (#1207)
- breaking: Node 18 dropped; Node 20+ required
- breaking: Plugin API v1 removed (see docs/migrate-2.0.md)
- 23 contributors, 6 of them first-time`

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
	tools, err := runtime.NewTools(changelogTool{})
	if err != nil {
		return err
	}
	st, err := openStack(ctx, dataDir, hostOptions{
		resolver:  endpoint.Static{"openai": {BaseURL: "https://replay.cairn.invalid/v1"}},
		transport: transport,
		tools:     tools,
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

	// While the first draft is being generated, the user steers: the steering
	// is durable at once but enters context only at the next turn boundary.
	var steerErr error
	transport.OnRequest = func(n int, _ []byte) {
		if n == 1 {
			_, steerErr = client.Steer(ctx, api.SteerParams{SessionID: demoSession, Input: []api.InputPart{{Type: "text", Text: demoSteering}}})
		}
	}

	fmt.Fprintln(out, "Cairn demo: the Acorn release editor")
	fmt.Fprintln(out, "RECORDED: model answers are replayed from a cassette embedded in this binary (Chat Completions wire format); no network is used.")
	fmt.Fprintf(out, "data: %s\n\n", dataDir)

	if _, err := client.CreateSession(ctx, api.CreateSessionParams{
		SessionID:    demoSession,
		Model:        core.ModelSelection{ProviderID: "openai", APIKind: core.APIChatCompletions, Model: "gpt-4o-mini"},
		Instructions: demoInstructions,
		Tools:        []string{changelogTool{}.Definition().Name},
	}); err != nil {
		return err
	}
	for _, msg := range []string{demoRequest, demoFollowUp} {
		status, err := runChat(ctx, out, client, chatOptions{session: demoSession}, msg)
		if err != nil {
			return err
		}
		if steerErr != nil {
			return fmt.Errorf("steering: %w", steerErr)
		}
		if status != core.StatusCompleted {
			return fmt.Errorf("demo run ended %s", status)
		}
		fmt.Fprintln(out)
	}
	return printSummary(ctx, out, client, st)
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

// changelogTool is the demo's one tool: it returns Acorn's changelog.
type changelogTool struct{}

func (changelogTool) Definition() provider.Tool {
	return provider.Tool{
		Name:        "read_changelog",
		Description: "Read the changelog of an Acorn release.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"version":{"type":"string","description":"release version, e.g. 2.0"}},"required":["version"],"additionalProperties":false}`),
	}
}

func (changelogTool) Invoke(_ context.Context, _ runtime.ToolEnv, args json.RawMessage) (runtime.ToolOutput, error) {
	var p struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(args, &p); err != nil || p.Version != "2.0" {
		return runtime.ToolOutput{Content: []byte("no changelog for that version; try \"2.0\""), IsError: true}, nil
	}
	return runtime.ToolOutput{Content: []byte(demoChangelog)}, nil
}
