// Command mcptest-server is mcptest's server over stdio.
package main

import (
	"context"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairn-agents/cairn/internal/mcptest"
)

func main() {
	if err := mcptest.NewServer(os.Args[1:]...).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
