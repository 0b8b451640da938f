// Package runtime holds what every host shares: the effect executors, which
// load bytes from CAS, call a provider adapter or a tool, write what comes
// back to CAS and return facts and refs as core commands, and the decisions
// both hosts make the same way about driving a session (the loop, failure
// results, fork and delete, loading state). Hosts (runtime/local,
// runtime/temporal) keep their I/O and scheduling: when work runs, where,
// and how it is retried.
package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/vfs"
)

// FailedToolCall is the result of a tool call that failed at the runtime
// boundary (not a tool's own error): the constant "tool failed" the model
// sees.
func FailedToolCall(runID string, turn int, call core.ToolCall) core.ToolResult {
	return core.ToolResult{RunID: runID, Turn: turn, CallID: call.CallID, Status: core.CallFailed,
		Result: core.EntryInput{Content: core.ToolFailedRef, TokenEstimate: provider.Estimate(core.ToolFailedBytes), Preview: "tool failed"}}
}

// Tool is a model-facing tool.
type Tool interface {
	Definition() provider.Tool
	// Invoke runs the tool on its raw JSON arguments. A returned error means the
	// runtime failed to run the tool; a result the model should see as an
	// error is a ToolOutput with IsError set.
	Invoke(ctx context.Context, env ToolEnv, args json.RawMessage) (ToolOutput, error)
}

// ToolEnv is what a tool may know of the session that called it.
type ToolEnv struct {
	SessionID string
	// Files is the session's linked file tree, resolved at the call (a
	// workspace link reads and moves its current head); nil when the
	// session links none or the host has no workspace store.
	Files *vfs.FS
	// Agent is what agent_run needs; nil when the host runs no
	// sub-agents.
	Agent *AgentEnv
}

// ToolOutput is what a tool hands back to the model: Content of a
// media type, or Parts when it has several.
type ToolOutput struct {
	Content   []byte
	MediaType string // defaults to text/plain
	Parts     []ToolOutputPart
	IsError   bool
}

// Tools is a registry of tools by name.
type Tools struct{ byName map[string]Tool }

// NewTools registers tools; a duplicate name is an error.
func NewTools(tools ...Tool) (*Tools, error) {
	r := &Tools{byName: map[string]Tool{}}
	for _, t := range tools {
		name := t.Definition().Name
		if name == "" {
			return nil, fmt.Errorf("tool with empty name")
		}
		if _, dup := r.byName[name]; dup {
			return nil, fmt.Errorf("tool %q registered twice", name)
		}
		r.byName[name] = t
	}
	return r, nil
}

// Lookup returns the tool named name.
func (r *Tools) Lookup(name string) (Tool, bool) {
	if r == nil {
		return nil, false
	}
	t, ok := r.byName[name]
	return t, ok
}

// Definitions returns the definitions of the tools cfg grants, in grant
// order: a client tool's from cfg, a built-in one's from r, an MCP grant's
// from mcp (the session's catalog; "SERVER.*" gives the server's tools in
// its listed order, each once). Granted names that are none of these are
// left out (calls to them get the "unavailable" result).
func (r *Tools) Definitions(cfg core.SessionConfig, mcp []MCPToolDefinition) []provider.Tool {
	var out []provider.Tool
	sent := map[string]bool{} // wire names, when both SERVER.* and SERVER.TOOL are granted
	for _, name := range cfg.Tools {
		if server, tool, ok := core.MCPGrant(name); ok {
			for _, d := range mcp {
				if wire := core.MCPToolWireName(d.Server, d.Name); d.Server == server && (tool == "*" || d.Name == tool) && !sent[wire] {
					sent[wire] = true
					out = append(out, provider.Tool{Name: wire, Description: d.Description, Parameters: d.Parameters})
				}
			}
		} else if i := slices.IndexFunc(cfg.ClientTools, func(t core.ClientTool) bool { return t.Name == name }); i >= 0 {
			t := cfg.ClientTools[i]
			out = append(out, provider.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
		} else if t, ok := r.Lookup(name); ok {
			out = append(out, t.Definition())
		}
	}
	return out
}

// Names lists the registered tool names, sorted.
func (r *Tools) Names() []string {
	if r == nil {
		return nil
	}
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
