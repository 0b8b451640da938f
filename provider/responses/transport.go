package responses

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/httpx"
)

// Paths under the endpoint's base URL.
const (
	responsesPath = "/responses"
	compactPath   = "/responses/compact" // standalone compaction; see compact.go
)

// post sends body to path and returns the 2xx response body, or a classified
// error. Generation and compaction share it: the same authentication, headers
// and error classification.
// A streamed answer is assembled as it arrives (onDelta hears its pieces)
// into the response it stands for.
func (a *Adapter) post(ctx context.Context, ep endpoint.Endpoint, path string, body net.Buffers, onDelta func(provider.Delta)) ([]byte, error) {
	stream := func(r io.Reader) ([]byte, error) { return assembleStream(r, onDelta) }
	data, err := httpx.Post(ctx, httpx.Call{Client: a.client, Endpoint: ep, Path: path, Parts: body,
		Headers: httpx.Bearer(ep.APIKey), Now: a.now, Classify: httpx.OpenAIQuota, Stream: stream})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("responses: %w", ctx.Err())
	}
	return data, err
}
