// Package mcptools makes MCP servers tool sources for Cairn sessions, with
// the official Go SDK: it reads the server config file's mcpServers,
// connects to each server (Streamable HTTP or stdio) when first used, and
// lists and calls its tools for the runtime (runtime.MCPServers).
package mcptools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider/endpoint"
)

// ServerConfig is one server of the config file's mcpServers: either a
// URL (Streamable HTTP) with non-secret headers and the name of the
// environment variable holding its key, or a command (stdio) with the
// environment it gets.
type ServerConfig struct {
	URL       string            `json:"url,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	APIKeyEnv string            `json:"apiKeyEnv,omitempty"`
	// Command is the program and its arguments, started once and kept.
	Command []string `json:"command,omitempty"`
	// Env is the whole environment of the command besides PATH and HOME
	// (Cairn's own, with its provider keys, is not passed on); a value
	// "${NAME}" is Cairn's variable NAME, read when the command starts.
	Env map[string]string `json:"env,omitempty"`
	// TimeoutMs bounds one call; 0 means DefaultTimeout.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
}

// ConfigError is a config file whose mcpServers break a rule; it never
// quotes a header's value or a key.
type ConfigError struct {
	Path   string
	Server string
	Reason string
}

func (e *ConfigError) Error() string {
	if e.Server == "" {
		return fmt.Sprintf("config file %s: mcpServers: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("config file %s: mcpServers.%s: %s", e.Path, e.Server, e.Reason)
}

// LoadConfig reads the mcpServers of the config file at path (none for "").
// A command (stdio) server is refused unless allowCommands: a hosted
// deployment starts no programs a config file names unless its operator
// says so.
func LoadConfig(path string, allowCommands bool) (map[string]ServerConfig, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{Path: path, Reason: "cannot read the file"}
	}
	var file struct {
		MCPServers json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, &ConfigError{Path: path, Reason: "invalid JSON"}
	}
	if len(file.MCPServers) == 0 || string(file.MCPServers) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(file.MCPServers))
	dec.DisallowUnknownFields() // a misspelt apiKeyEnv must not send calls without a key
	var servers map[string]ServerConfig
	if err := dec.Decode(&servers); err != nil {
		return nil, &ConfigError{Path: path, Reason: "not an object of servers: " + err.Error()}
	}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if reason := check(servers[name], allowCommands); reason != "" {
			return nil, &ConfigError{Path: path, Server: name, Reason: reason}
		}
		if !core.ValidMCPServerName(name) {
			return nil, &ConfigError{Path: path, Server: name, Reason: fmt.Sprintf("a server's name is 1 to %d letters, digits or '-'", core.MaxMCPServerName)}
		}
	}
	return servers, nil
}

// check applies the provider endpoints' rules to a server: https, or
// http on a loopback host only; headers without credentials.
func check(c ServerConfig, allowCommands bool) string {
	switch {
	case (c.URL == "") == (len(c.Command) == 0):
		return "give either url (Streamable HTTP) or command (stdio)"
	case c.TimeoutMs < 0:
		return "timeoutMs must not be negative"
	case len(c.Command) > 0:
		if !allowCommands {
			return "command servers (stdio) run only with the embedded store or `serve --mcp-commands`"
		}
		if c.Command[0] == "" {
			return "command[0] must name a program"
		}
		if len(c.Headers) > 0 || c.APIKeyEnv != "" {
			return "headers and apiKeyEnv are for url servers; pass a command its key in env"
		}
		return ""
	}
	if len(c.Env) > 0 {
		return "env is for command servers"
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "url must be an absolute http or https URL"
	}
	if u.Scheme == "http" && !endpoint.IsLoopback(u.Hostname()) {
		return "url: plain http is allowed on a loopback host only (localhost, 127.0.0.1, ::1); use https"
	}
	if u.User != nil || u.RawQuery != "" {
		// A query string is where keys hide; errors and logs quote URLs.
		return "url: no user or query string; a key goes in apiKeyEnv"
	}
	return endpoint.CheckHeaders(c.Headers)
}
