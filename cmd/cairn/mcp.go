package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

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

func mcpCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "MCP servers the config file names, as tool sources for sessions"}
	var configPath string
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "Connect to each configured MCP server and show its status and tools",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return mcpList(cmd.Context(), cmd.OutOrStdout(), configPath, asJSON)
		},
	}
	list.Flags().StringVar(&configPath, "config", os.Getenv("CAIRN_CONFIG"), "config file with mcpServers (env CAIRN_CONFIG)")
	list.Flags().BoolVar(&asJSON, "json", false, "one JSON object per server")
	cmd.AddCommand(list)
	return cmd
}

// mcpServerStatus is one line of `cairn mcp list`.
type mcpServerStatus struct {
	Server string   `json:"server"`
	Status string   `json:"status"` // "ok" or "unreachable"
	Error  string   `json:"error,omitempty"`
	Tools  []string `json:"tools,omitempty"` // as sessions grant them: SERVER.TOOL
}

// mcpList lists every server's tools as a session would at its refresh
// boundary. It runs as the user who calls it, so command servers start.
func mcpList(ctx context.Context, out io.Writer, configPath string, asJSON bool) error {
	if configPath == "" {
		return fmt.Errorf("give the config file with --config (or CAIRN_CONFIG)")
	}
	configs, err := mcptools.LoadConfig(configPath, true)
	if err != nil {
		return err
	}
	if len(configs) == 0 {
		fmt.Fprintf(out, "no mcpServers in %s\n", configPath)
		return nil
	}
	servers := mcptools.New(configs, mcptools.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer servers.Close()
	for _, name := range servers.Names() {
		st := mcpServerStatus{Server: name, Status: "ok"}
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		tools, err := servers.ListTools(lctx, name)
		cancel()
		if err != nil {
			st.Status, st.Error = "unreachable", err.Error()
		}
		for _, t := range tools {
			st.Tools = append(st.Tools, name+"."+t.Name)
		}
		if asJSON {
			line, _ := json.Marshal(st)
			fmt.Fprintln(out, string(line))
			continue
		}
		if st.Error != "" {
			fmt.Fprintf(out, "%s\tunreachable\t%s\n", name, st.Error)
		} else {
			fmt.Fprintf(out, "%s\tok\t%d tools: %s\n", name, len(st.Tools), strings.Join(st.Tools, ", "))
		}
	}
	return nil
}
