package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairn-agents/cairn/internal/mcptest"
)

// `cairn mcp list` shows each server's status and its tools as sessions
// grant them; a server that does not answer is shown with its error.
func TestMCPList(t *testing.T) {
	srv := httptest.NewServer(mcptest.HTTPHandler(func() *mcp.Server { return mcptest.NewServer() }, ""))
	t.Cleanup(srv.Close)
	cfg := filepath.Join(t.TempDir(), "config.json")
	body := fmt.Sprintf(`{"mcpServers":{"docs":{"url":%q},"gone":{"url":"http://127.0.0.1:1/mcp"}}}`, srv.URL)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := mcpList(context.Background(), &out, cfg, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || lines[0] != "docs\tok\t5 tools: docs.echo, docs.env, docs.fail, docs.mixed, docs.slow" ||
		!strings.HasPrefix(lines[1], "gone\tunreachable\t") {
		t.Fatalf("cairn mcp list printed:\n%s", out.String())
	}
}
