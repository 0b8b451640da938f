package mcptools

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's media type is kept only when valid, and a binary part too
// large for a request is named instead of kept.
func TestToolOutputBoundsWhatAServerSends(t *testing.T) {
	out := toolOutput(&mcp.CallToolResult{Content: []mcp.Content{
		&mcp.ImageContent{MIMEType: "image/png\r\nX-Evil: 1", Data: []byte("png")},
		&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, maxBinaryPart+1)},
	}})
	if len(out.Parts) != 2 || out.Parts[0].MediaType != "application/octet-stream" {
		t.Fatalf("parts %+v", out.Parts)
	}
	if got := string(out.Parts[1].Data); out.Parts[1].MediaType != "text/plain; charset=utf-8" || !strings.Contains(got, "too large to keep") {
		t.Fatalf("an oversized image became %q (%s)", got, out.Parts[1].MediaType)
	}
}
