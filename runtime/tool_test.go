package runtime_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
)

type namedTool struct{ name string }

func (n namedTool) Definition() provider.Tool { return provider.Tool{Name: n.name} }
func (namedTool) Invoke(context.Context, runtime.ToolEnv, json.RawMessage) (runtime.ToolOutput, error) {
	return runtime.ToolOutput{}, nil
}

// The definitions follow the grant order, whatever the registration order:
// built-in and client tools by name, an MCP server's tools in its listed
// order for SERVER.*, each tool once; grants of nothing known are left out.
func TestDefinitionsFollowTheGrantOrder(t *testing.T) {
	cfg := core.SessionConfig{Tools: []string{"weather", "docs.*", "lookup", "docs.find", "nothing", "read_file"},
		ClientTools: []core.ClientTool{{Name: "lookup", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	mcp := []runtime.MCPToolDefinition{{Server: "docs", Name: "read"}, {Server: "docs", Name: "find"}, {Server: "mail", Name: "send"}}
	for _, order := range [][]string{{"read_file", "weather"}, {"weather", "read_file"}} {
		var tools []runtime.Tool
		for _, n := range order {
			tools = append(tools, namedTool{n})
		}
		r, err := runtime.NewTools(tools...)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, d := range r.Definitions(cfg, mcp) {
			names = append(names, d.Name)
		}
		if want := []string{"weather", "docs__read", "docs__find", "lookup", "read_file"}; !slices.Equal(names, want) {
			t.Fatalf("registered %v: definitions %v, want %v", order, names, want)
		}
	}
}
