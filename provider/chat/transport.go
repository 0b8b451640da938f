package chat

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/httpx"
)

const completionsPath = "/chat/completions"

// post sends body and returns the 2xx response body, or a classified error.
// A streamed answer is assembled as it arrives (onDelta hears its pieces)
// into the body it stands for.
func (a *Adapter) post(ctx context.Context, ep endpoint.Endpoint, body net.Buffers, onDelta func(provider.Delta)) ([]byte, error) {
	stream := func(r io.Reader) ([]byte, error) { return assembleStream(r, onDelta) }
	data, err := httpx.Post(ctx, httpx.Call{Client: a.client, Endpoint: ep, Path: completionsPath, Parts: body,
		Headers: httpx.Bearer(ep.APIKey), Now: a.now, Classify: httpx.OpenAIQuota, Stream: stream})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("chat: %w", ctx.Err())
	}
	return data, err
}
