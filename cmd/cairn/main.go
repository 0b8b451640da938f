// Command cairn is the one binary: the server, its clients and the demo.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
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
	}
	root.AddCommand(serveCommand(), chatCommand(), demoCommand(), sessionsCommand(), eventsCommand(), contextCommand())
	return root
}

// addrFlag adds --addr (env CAIRN_ADDR) to a client command.
func addrFlag(cmd *cobra.Command, addr *string) {
	def := os.Getenv("CAIRN_ADDR")
	if def == "" {
		def = defaultAddr
	}
	cmd.Flags().StringVar(addr, "addr", def, "server address (env CAIRN_ADDR)")
}
