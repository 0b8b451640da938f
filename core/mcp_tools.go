package core

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MCPTool names one tool an MCP server listed for a session. A session
// grants MCP tools in Tools as "SERVER.TOOL" or "SERVER.*"; the host lists
// the granted servers' tools at the refresh boundary and records them in
// the config (MCPTools, and their definitions in the MCPCatalog blob), so
// the catalog changes only between runs and every worker sees the same
// one.
type MCPTool struct {
	Server string `json:"server"`
	Name   string `json:"name"`
}

// Bounds on a session's MCP catalog.
const (
	MaxMCPTools        = 1024
	MaxMCPServerName   = 32
	MaxMCPToolName     = 128
	MaxToolNameOnWire  = 64
	mcpWireHashLength  = 8
	MediaMCPCatalog    = "application/vnd.cairn.mcp-tools+json"
	mcpAllTools        = "*"
	mcpGrantSeparator  = "."
	mcpWireSeparator   = "__"
	mcpWireTruncatedTo = MaxToolNameOnWire - 1 - mcpWireHashLength
)

// ValidMCPServerName reports whether name may name an MCP server: 1 to 32
// letters, digits or '-'. No '.', which separates a grant's server from
// its tool, and no '_', so the wire name's "__" after it is unambiguous.
func ValidMCPServerName(name string) bool {
	if name == "" || len(name) > MaxMCPServerName {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// MCPGrant splits a grant of MCP tools, "SERVER.TOOL" or "SERVER.*"; ok is
// false for any other tool name (a built-in or client tool's).
func MCPGrant(grant string) (server, tool string, ok bool) {
	server, tool, ok = strings.Cut(grant, mcpGrantSeparator)
	return server, tool, ok
}

// MCPToolWireName is the name the model sees for an MCP tool: the server,
// "__" and the tool's name, which every provider API accepts as it is
// when it is made of letters, digits, '_' and '-' and fits 64 bytes.
// Otherwise the other characters become '_' and the name is cut to fit,
// ending in a hash of the server and tool so two tools never share it.
// It depends on nothing else, so a tool keeps its name across listings
// and the request prefix stays the same.
func MCPToolWireName(server, tool string) string {
	name := server + mcpWireSeparator + tool
	clean := []byte(name)
	changed := false
	for i, c := range clean {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			clean[i], changed = '_', true
		}
	}
	if !changed && len(clean) <= MaxToolNameOnWire {
		return name
	}
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	if len(clean) > mcpWireTruncatedTo {
		clean = clean[:mcpWireTruncatedTo]
	}
	return string(clean) + "_" + hex.EncodeToString(sum[:])[:mcpWireHashLength]
}

// MCPToolFor returns the MCP tool the model calls by name, when the
// session's catalog has it.
func (cfg SessionConfig) MCPToolFor(name string) (MCPTool, bool) {
	for _, t := range cfg.MCPTools {
		if MCPToolWireName(t.Server, t.Name) == name {
			return t, true
		}
	}
	return MCPTool{}, false
}

// grantFor returns the grant that lets the model call the tool it names:
// the name itself for a built-in or client tool; for an MCP tool,
// "SERVER.TOOL" if granted, else "SERVER.*". ok is false for a tool the
// session does not grant.
func (cfg SessionConfig) grantFor(name string) (string, bool) {
	if contains(cfg.Tools, name) {
		return name, true
	}
	t, ok := cfg.MCPToolFor(name)
	if !ok {
		return "", false
	}
	for _, g := range []string{t.Server + mcpGrantSeparator + t.Name, t.Server + mcpGrantSeparator + mcpAllTools} {
		if contains(cfg.Tools, g) {
			return g, true
		}
	}
	return "", false
}

// grantsServer reports whether some grant names server's tools.
func (cfg SessionConfig) grantsServer(server string) bool {
	for _, g := range cfg.Tools {
		if s, _, ok := MCPGrant(g); ok && s == server {
			return true
		}
	}
	return false
}

// validateMCP checks the MCP grants and the catalog the host recorded: a
// grant is "SERVER.TOOL" or "SERVER.*" with a valid server name; each
// listed tool is of a granted server and has a wire name no other has; a
// catalog with tools has its definitions' blob.
func validateMCP(cfg SessionConfig) error {
	for i, g := range cfg.Tools {
		server, tool, ok := MCPGrant(g)
		if !ok {
			continue
		}
		switch {
		case !ValidMCPServerName(server):
			return reject(RejectInvalidConfiguration, "tools[%d]: %q: an MCP grant is SERVER.TOOL or SERVER.*, the server named with 1 to %d letters, digits or '-'", i, g, MaxMCPServerName)
		case tool == "" || len(tool) > MaxMCPToolName:
			return reject(RejectInvalidConfiguration, "tools[%d]: %q: the tool's name must be 1 to %d bytes, or *", i, g, MaxMCPToolName)
		}
	}
	if len(cfg.MCPTools) > MaxMCPTools {
		return reject(RejectInvalidConfiguration, "at most %d MCP tools, got %d", MaxMCPTools, len(cfg.MCPTools))
	}
	if len(cfg.MCPTools) > 0 && cfg.MCPCatalog == nil {
		return reject(RejectInvalidConfiguration, "mcpTools without their mcpCatalog")
	}
	if cfg.MCPCatalog != nil {
		if err := cfg.MCPCatalog.Validate(); err != nil {
			return reject(RejectInvalidConfiguration, "mcpCatalog: %v", err)
		}
	}
	for i, t := range cfg.MCPTools {
		switch {
		case !ValidMCPServerName(t.Server) || !cfg.grantsServer(t.Server):
			return reject(RejectInvalidConfiguration, "mcpTools[%d]: server %q is not granted", i, t.Server)
		case t.Name == "" || len(t.Name) > MaxMCPToolName:
			return reject(RejectInvalidConfiguration, "mcpTools[%d]: the name must be 1 to %d bytes", i, MaxMCPToolName)
		}
		wire := MCPToolWireName(t.Server, t.Name)
		for _, u := range cfg.MCPTools[:i] {
			if MCPToolWireName(u.Server, u.Name) == wire {
				return reject(RejectInvalidConfiguration, "mcpTools[%d]: %s.%s is listed twice", i, t.Server, t.Name)
			}
		}
	}
	return nil
}
