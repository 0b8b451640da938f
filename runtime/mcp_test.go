package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
)

// failingMCP is an MCP server that fails every call with err.
type failingMCP struct{ err error }

func (f failingMCP) ListTools(context.Context, string) ([]runtime.MCPToolDefinition, error) {
	return nil, f.err
}

func (f failingMCP) CallTool(context.Context, string, string, json.RawMessage) (runtime.ToolOutput, error) {
	return runtime.ToolOutput{}, f.err
}

// An MCP call that fails or times out is an error result naming the
// server, never the transport's error (which may quote a URL and its
// key); the run goes on with it.
func TestMCPCallFailuresAreErrorResults(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	args, _ := blob.PutRef(ctx, blobs, []byte(`{}`), content.MediaJSON, "")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New(`Post "https://user:s3cret@docs.example/mcp": connection refused`), `The MCP server "docs" failed the call of "find".`},
		{fmt.Errorf("calling: %w", context.DeadlineExceeded), `The MCP server "docs" did not answer the call of "find" in time.`},
	} {
		x := &runtime.Executor{Blobs: blobs, MCP: failingMCP{tc.err}}
		res, err := x.InvokeTool(ctx, runtime.ToolSession{ID: "s", MCP: &core.MCPTool{Server: "docs", Name: "find"}}, "r", 1,
			core.ToolCall{CallID: "c", Name: "docs__find", Arguments: args})
		if err != nil || res.Status != core.CallError {
			t.Fatalf("InvokeTool = %+v, %v; want an error result", res, err)
		}
		data, err := blobs.Get(ctx, res.Result.Content.Digest)
		if err != nil || string(data) != tc.want || strings.Contains(string(data), "s3cret") {
			t.Fatalf("result %q (%v), want %q", data, err, tc.want)
		}
	}
}
