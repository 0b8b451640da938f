package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// MCPServers are the MCP servers a host's sessions may take tools from
// (the server config's mcpServers); package mcptools implements them with
// the official SDK. An Executor without them offers no MCP tools.
type MCPServers interface {
	// ListTools returns the tools server offers now, in its listed order.
	ListTools(ctx context.Context, server string) ([]MCPToolDefinition, error)
	// CallTool calls one. A tool's own error is an output with IsError;
	// an error is the server's or the transport's.
	CallTool(ctx context.Context, server, tool string, args json.RawMessage) (ToolOutput, error)
}

// MCPToolDefinition is one listed tool, as a session's catalog blob keeps
// it (core.MediaMCPCatalog: a JSON array of them, in canonical form).
type MCPToolDefinition struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Bounds on what a listed tool brings into every request.
const (
	maxMCPDescription = 4096
	maxMCPParameters  = 64 << 10
)

// MCPCatalog is a session's MCP tools as a refresh found them: their names
// (core.SessionConfig.MCPTools) and the blob of their definitions.
type MCPCatalog struct {
	Tools []core.MCPTool      `json:"tools,omitempty"`
	Ref   *content.ContentRef `json:"ref,omitempty"`
	// Down are the servers that did not list their tools, in grant order:
	// their tools are the last catalog's.
	Down []string `json:"down,omitempty"`
}

// warnings are what the session records of servers that were down.
func (c MCPCatalog) warnings(at int64) []core.NoteWarning {
	var out []core.NoteWarning
	for _, server := range c.Down {
		out = append(out, core.NoteWarning{AtMs: at, Source: "mcp:" + server,
			Message: fmt.Sprintf("The MCP server %s did not list its tools at the start of a run; the session keeps its last list of them.", server)})
	}
	return out
}

// same reports whether cfg records this catalog already.
func (c MCPCatalog) same(cfg core.SessionConfig) bool {
	if (c.Ref == nil) != (cfg.MCPCatalog == nil) || c.Ref != nil && c.Ref.Digest != cfg.MCPCatalog.Digest {
		return false
	}
	return slices.Equal(c.Tools, cfg.MCPTools)
}

// grantedServers are the MCP servers cfg grants tools of, in the order
// of their first grant.
func grantedServers(cfg core.SessionConfig) []string {
	var out []string
	for _, g := range cfg.Tools {
		if server, _, ok := core.MCPGrant(g); ok && !slices.Contains(out, server) {
			out = append(out, server)
		}
	}
	return out
}

// RefreshMCP lists the tools of the MCP servers cfg grants, each in its
// listed order. A server that does not answer keeps the tools the last
// catalog had of it, and the failure is logged as a warning. A tool whose
// definition is too large or not a JSON Schema object is left out, and so
// is a second tool with the same wire name. nil when cfg grants no MCP
// tools.
func (x *Executor) RefreshMCP(ctx context.Context, cfg core.SessionConfig) (*MCPCatalog, error) {
	servers := grantedServers(cfg)
	if len(servers) == 0 {
		return nil, nil
	}
	var last []MCPToolDefinition
	if cfg.MCPCatalog != nil {
		var err error
		if last, err = x.mcpDefinitions(ctx, *cfg.MCPCatalog); err != nil {
			x.logger().Warn("reading the last MCP catalog failed; listing anew", "err", err)
		}
	}
	var defs []MCPToolDefinition
	var down []string
	wire := map[string]bool{}
	add := func(d MCPToolDefinition) {
		name := core.MCPToolWireName(d.Server, d.Name)
		if wire[name] || len(defs) >= core.MaxMCPTools {
			return
		}
		wire[name] = true
		defs = append(defs, d)
	}
	for _, server := range servers {
		listed, err := x.listMCP(ctx, server)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			x.logger().Warn("an MCP server did not list its tools; the session keeps its last list", "server", server, "err", err)
			down = append(down, server)
			for _, d := range last {
				if d.Server == server {
					add(d)
				}
			}
			continue
		}
		for _, d := range listed {
			if p, ok := mcpParameters(d); ok {
				d.Server, d.Parameters = server, p
				if len(d.Description) > maxMCPDescription {
					d.Description = strings.ToValidUTF8(d.Description[:maxMCPDescription], "")
				}
				add(d)
			} else {
				x.logger().Warn("an MCP tool's input schema is too large or not an object; it is left out", "server", server, "tool", d.Name)
			}
		}
	}
	out := &MCPCatalog{Down: down}
	if len(defs) == 0 {
		return out, nil
	}
	data, err := content.MarshalCanonical(defs)
	if err != nil {
		return nil, err
	}
	ref, err := blob.PutRef(ctx, x.Blobs, data, core.MediaMCPCatalog, "")
	if err != nil {
		return nil, err
	}
	out.Ref = &ref
	for _, d := range defs {
		out.Tools = append(out.Tools, core.MCPTool{Server: d.Server, Name: d.Name})
	}
	return out, nil
}

// listMCP lists one server's tools; without MCPServers every server is
// unreachable.
func (x *Executor) listMCP(ctx context.Context, server string) ([]MCPToolDefinition, error) {
	if x.MCP == nil {
		return nil, errors.New("no MCP servers are configured")
	}
	return x.MCP.ListTools(ctx, server)
}

// mcpParameters is a listed tool's input schema in canonical form, if it
// is a JSON object of at most maxMCPParameters bytes.
func mcpParameters(d MCPToolDefinition) (json.RawMessage, bool) {
	if d.Name == "" || len(d.Name) > core.MaxMCPToolName || len(d.Parameters) > maxMCPParameters {
		return nil, false
	}
	if len(d.Parameters) == 0 {
		return json.RawMessage(`{"type":"object"}`), true
	}
	c, err := content.Canonical(d.Parameters)
	if err != nil || len(c) < 2 || c[0] != '{' {
		return nil, false
	}
	return c, true
}

// mcpDefinitions reads a catalog blob, through Pieces: every request of
// the session carries the same catalog until the next refresh.
func (x *Executor) mcpDefinitions(ctx context.Context, ref content.ContentRef) ([]MCPToolDefinition, error) {
	key := append([]byte("mcp-catalog\x00"), ref.Digest.String()...)
	if v, ok := x.Pieces.Get(key); ok {
		if defs, ok := v.([]MCPToolDefinition); ok {
			return defs, nil
		}
	}
	data, err := x.Blobs.Get(ctx, ref.Digest)
	if err != nil {
		return nil, fmt.Errorf("reading the MCP catalog: %w", err)
	}
	var defs []MCPToolDefinition
	if err := json.Unmarshal(data, &defs); err != nil {
		return nil, fmt.Errorf("decoding the MCP catalog: %w", err)
	}
	x.Pieces.Put(key, defs, int64(len(data)))
	return defs, nil
}

// invokeMCP runs a call of an MCP tool. A server that fails or does not
// answer in time gives the model an error result naming the server, and
// the run goes on; the cause is logged, since a transport's error may
// quote a URL and its credentials.
func (x *Executor) invokeMCP(ctx context.Context, sess ToolSession, runID string, turn int, call core.ToolCall, args json.RawMessage) (ToolOutput, error) {
	t := *sess.MCP
	if x.MCP == nil {
		return ToolOutput{IsError: true, Content: fmt.Appendf(nil, "The MCP server %q is not configured on this server.", t.Server)}, nil
	}
	out, err := x.MCP.CallTool(ctx, t.Server, t.Name, args)
	if ctx.Err() != nil {
		return ToolOutput{}, ctx.Err()
	}
	if err != nil {
		x.logger().Warn("an MCP tool call failed; the model sees an error result", "session", sess.ID, "run", runID, "turn", turn,
			"call", call.CallID, "server", t.Server, "tool", t.Name, "err", err)
		msg := fmt.Sprintf("The MCP server %q failed the call of %q.", t.Server, t.Name)
		if errors.Is(err, context.DeadlineExceeded) {
			msg = fmt.Sprintf("The MCP server %q did not answer the call of %q in time.", t.Server, t.Name)
		}
		return ToolOutput{IsError: true, Content: []byte(msg)}, nil
	}
	return out, nil
}

// toolDefinitions are the definitions of the tools cfg grants, in grant
// order, MCP tools' from the session's catalog.
func (x *Executor) toolDefinitions(ctx context.Context, cfg core.SessionConfig) ([]provider.Tool, error) {
	var mcp []MCPToolDefinition
	if cfg.MCPCatalog != nil {
		var err error
		if mcp, err = x.mcpDefinitions(ctx, *cfg.MCPCatalog); err != nil {
			return nil, err
		}
	}
	return x.Tools.Definitions(cfg, mcp), nil
}
