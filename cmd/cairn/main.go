// Command cairn is the one binary: the server, its clients and the demo.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
)

// defaultAddr is where serve listens and clients connect unless told otherwise.
const defaultAddr = "127.0.0.1:8420"

func main() {
	if err := rootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "cairn:", err)
		os.Exit(1)
	}
}

func rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "cairn",
		Short:         "Cairn is a durable agent runtime",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       readBuildInfo().String(), // --version
	}
	root.AddCommand(versionCommand(), cancelCommand(), steerCommand(), runCommand(), serveCommand(), workerCommand(), migrateCommand(), universeCommand(), chatCommand(), demoCommand(), exportCommand(), importCommand(), sessionsCommand(), sessionCommand(), eventsCommand(), contextCommand(), vfsCommand(), transcriptCommand(), cacheCommand(), gcCommand(), storageCommand(), toolsCommand(), approvalsCommand(), mcpCommand())
	return root
}

// clientFlags are the flags every client command shares.
type clientFlags struct {
	addr   string
	server string
	apiKey string
}

// register adds --addr (env CAIRN_ADDR), --server (a URL, which wins over
// --addr) and --api-key (env CAIRN_API_KEY).
func (f *clientFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.addr, "addr", envOr("CAIRN_ADDR", defaultAddr), "server address (env CAIRN_ADDR)")
	cmd.Flags().StringVar(&f.server, "server", "", "server URL, such as http://127.0.0.1:8420; overrides --addr")
	cmd.Flags().StringVar(&f.apiKey, "api-key", "", "API key of a hosted server's universe (env CAIRN_API_KEY; prefer the env, flags show in ps)")
}

// client returns an API client for the flags.
func (f *clientFlags) client() *api.Client {
	key := f.apiKey
	if key == "" {
		key = os.Getenv("CAIRN_API_KEY")
	}
	addr := f.addr
	if f.server != "" {
		addr = f.server
	}
	return api.NewClient(addr, nil).WithAPIKey(key)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
