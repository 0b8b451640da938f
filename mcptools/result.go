package mcptools

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/runtime"
)

// toolOutput is what the model sees of a call's result: its text parts
// and the text of embedded resources, in order. Structured content alone
// is sent as its JSON. Images, audio, binary resources and resource
// links are named by a line of text (their media type and size) instead
// of their bytes: results reach the model as text for now.
func toolOutput(res *mcp.CallToolResult) runtime.ToolOutput {
	out := runtime.ToolOutput{IsError: res.IsError, MediaType: content.MediaText}
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil && r.Blob == nil {
				parts = append(parts, fmt.Sprintf("Resource %s (%s):\n%s", r.URI, mediaOr(r.MIMEType, "text"), r.Text))
			} else if r != nil {
				parts = append(parts, fmt.Sprintf("[resource %s: %s, %d bytes, not shown]", r.URI, mediaOr(r.MIMEType, "binary"), len(r.Blob)))
			}
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes, not shown]", mediaOr(c.MIMEType, "image"), len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes, not shown]", mediaOr(c.MIMEType, "audio"), len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s: %s]", c.URI, c.Name))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if data, err := json.Marshal(res.StructuredContent); err == nil {
			out.Content, out.MediaType = data, content.MediaJSON
			return out
		}
	}
	out.Content = []byte(strings.Join(parts, "\n\n"))
	return out
}

func mediaOr(mediaType, fallback string) string {
	if mediaType == "" {
		return fallback
	}
	return mediaType
}
