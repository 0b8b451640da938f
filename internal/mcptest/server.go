// Package mcptest is a real MCP server, built with the official Go SDK,
// for the tests of Cairn's MCP tool sources: the same tools over
// Streamable HTTP (HTTPHandler) and stdio (the mcptest-server command).
package mcptest

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// KeyEnv names the environment variable whose value the HTTP server
// expects as its bearer key, when it is set; the stdio server reports
// whether its environment has it.
const KeyEnv = "MCPTEST_KEY"

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type empty struct{}

// NewServer returns the test server. Its tools (the SDK lists them by
// name):
//   - echo {text}: "echo: TEXT"
//   - fail: a tool error ("the tool failed on purpose")
//   - slow: answers after 2 s
//   - mixed: a text, an embedded text resource and an image
//   - env: whether KeyEnv is set in the server's environment ("set"/"unset")
//
// and then one tool per name in extra, answering its name.
func NewServer(extra ...string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo a text back."}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."}, func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the tool failed on purpose"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Answers after two seconds."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "mixed", Description: "Text, a resource and an image."}, func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "three parts"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes.md", MIMEType: "text/markdown", Text: "# Notes"}},
			&mcp.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
		}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Whether " + KeyEnv + " is set."}, func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
		state := "unset"
		if os.Getenv(KeyEnv) != "" {
			state = "set"
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: state}}}, nil, nil
	})
	for _, name := range extra {
		AddTool(s, name)
	}
	return s
}

// AddTool adds a tool to s that answers its name; a server already
// serving lists it from then on.
func AddTool(s *mcp.Server, name string) {
	mcp.AddTool(s, &mcp.Tool{Name: name, Description: "An added tool."}, func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
	})
}

// HTTPHandler serves server over Streamable HTTP; with key set, a request
// without "Authorization: Bearer KEY" is refused (401).
func HTTPHandler(server func() *mcp.Server, key string) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server() }, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
