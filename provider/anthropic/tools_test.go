package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/provider"
)

// TestToolPresentationOrderIsStable: a logically equal toolset registered in
// a different order (and with differently formatted schemas) gives the same
// request bytes, pinned by a golden file; the order presented is the
// session's grant order, nothing else.
func TestToolPresentationOrderIsStable(t *testing.T) {
	defs := []provider.Tool{
		{Name: "read_file", Description: "Read a workspace file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
		{Name: "search", Description: "Search the web.", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)},
		{Name: "weather", Description: "Weather for a location.", Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}}}`)},
	}
	reformatted := make([]provider.Tool, len(defs))
	for i, d := range defs {
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, d.Parameters, "\t", "    "); err != nil {
			t.Fatal(err)
		}
		d.Parameters = pretty.Bytes()
		reformatted[i] = d
	}
	// registry is the tools as registered, in order; the request takes
	// them in grant order (runtime.Tools.Definitions, whose order its own
	// test pins).
	registry := func(order []int, from []provider.Tool) []provider.Tool {
		var tools []provider.Tool
		for _, i := range order {
			tools = append(tools, from[i])
		}
		return tools
	}
	grant := []string{"weather", "read_file", "search"}

	b := newCtx(t)
	b.instructions("instructions.main", "Use tools.")
	b.user("q")
	lowerWith := func(r []provider.Tool, granted []string) []byte {
		req := b.request()
		req.Tools = nil
		for _, name := range granted {
			if i := slices.IndexFunc(r, func(d provider.Tool) bool { return d.Name == name }); i >= 0 {
				req.Tools = append(req.Tools, r[i])
			}
		}
		body, err := Lower(context.Background(), b.blobs, req)
		if err != nil {
			t.Fatal(err)
		}
		return body
	}

	first := lowerWith(registry([]int{0, 1, 2}, defs), grant)
	for _, order := range [][]int{{2, 1, 0}, {1, 2, 0}, {0, 2, 1}} {
		for _, from := range [][]provider.Tool{defs, reformatted} {
			if got := lowerWith(registry(order, from), grant); !bytes.Equal(got, first) {
				t.Fatalf("registration order %v changed the request:\n%s\n%s", order, got, first)
			}
		}
	}
	golden(t, "request-tools.json", first)

	// The grant order is the presentation order.
	req := parseReq(t, first)
	var names []string
	for _, raw := range req.Tools {
		var tool struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(raw, &tool)
		names = append(names, tool.Name)
	}
	if len(names) != 3 || names[0] != "weather" || names[1] != "read_file" || names[2] != "search" {
		t.Fatalf("tools presented as %v", names)
	}
	if bytes.Equal(lowerWith(registry([]int{0, 1, 2}, defs), []string{"search", "read_file", "weather"}), first) {
		t.Fatal("a different grant order gave the same bytes")
	}
}
