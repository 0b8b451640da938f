package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/mcptools"
	"github.com/cairn-agents/cairn/runtime"
)

// mcpCommandsFlag adds --mcp-commands: a hosted server or worker starts
// the programs of command (stdio) MCP servers only when its operator says
// so; the embedded server always may.
func mcpCommandsFlag(cmd *cobra.Command, allow *bool) {
	cmd.Flags().BoolVar(allow, "mcp-commands", false, "hosted mode: allow MCP servers the config file runs as commands (stdio); the embedded mode always does")
}

// openMCP returns the config file's MCP servers, and nil (not a typed nil)
// when it names none.
func openMCP(configPath string, allowCommands bool, logger *slog.Logger) (runtime.MCPServers, []string, func(), error) {
	configs, err := mcptools.LoadConfig(configPath, allowCommands)
	if err != nil || len(configs) == 0 {
		return nil, nil, func() {}, err
	}
	s := mcptools.New(configs, mcptools.Options{Logger: logger})
	return s, s.Names(), s.Close, nil
}
