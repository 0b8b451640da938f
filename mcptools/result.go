package mcptools

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/runtime"
)

// toolOutput is a call's result as the runtime stores it. Text parts and
// the text of embedded resources are text, in order; a result with an
// image, audio or a binary resource keeps every part (runtime.ToolOutput
// Parts), each with its media type. Structured content alone is sent as
// its JSON; a resource link is named by a line of text.
func toolOutput(res *mcp.CallToolResult) runtime.ToolOutput {
	out := runtime.ToolOutput{IsError: res.IsError}
	var parts []runtime.ToolOutputPart
	var texts []string
	blobs := false
	text := func(s string) {
		texts = append(texts, s)
		parts = append(parts, runtime.ToolOutputPart{MediaType: content.MediaText, Data: []byte(s)})
	}
	binary := func(mediaType string, data []byte) {
		if len(data) > maxBinaryPart {
			text(fmt.Sprintf("[%s, %d bytes: too large to keep]", safeMediaType(mediaType), len(data)))
			return
		}
		blobs = true
		parts = append(parts, runtime.ToolOutputPart{MediaType: safeMediaType(mediaType), Data: data})
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			text(c.Text)
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil && r.Blob == nil {
				text(fmt.Sprintf("Resource %s (%s):\n%s", r.URI, mediaOr(r.MIMEType, "text"), r.Text))
			} else if r != nil {
				binary(r.MIMEType, r.Blob)
			}
		case *mcp.ImageContent:
			binary(c.MIMEType, c.Data)
		case *mcp.AudioContent:
			binary(c.MIMEType, c.Data)
		case *mcp.ResourceLink:
			text(fmt.Sprintf("[resource link %s: %s]", c.URI, c.Name))
		}
	}
	switch {
	case blobs:
		out.Parts = parts
	case len(texts) == 0 && res.StructuredContent != nil:
		if data, err := json.Marshal(res.StructuredContent); err == nil {
			out.Content, out.MediaType = data, content.MediaJSON
		}
	default:
		out.Content, out.MediaType = []byte(strings.Join(texts, "\n\n")), content.MediaText
	}
	return out
}

// maxBinaryPart bounds an image, audio clip or binary resource a result
// keeps: every later request carries it, and provider APIs refuse images
// of more than a few megabytes.
const maxBinaryPart = 8 << 20

// safeMediaType is a server's media type if it is a valid one, else
// application/octet-stream: the string is the server's, and it reaches
// requests and the inspector.
func safeMediaType(mt string) string {
	if mt == "" || content.ValidateMediaType(mt) != nil {
		return "application/octet-stream"
	}
	return mt
}

func mediaOr(mediaType, fallback string) string {
	if mediaType == "" {
		return fallback
	}
	return mediaType
}
