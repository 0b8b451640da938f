package chat

import (
	"context"
	"fmt"
	"net"

	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/httpx"
)

const completionsPath = "/chat/completions"

// post sends body and returns the 2xx response body, or a classified error.
func (a *Adapter) post(ctx context.Context, ep endpoint.Endpoint, body net.Buffers) ([]byte, error) {
	data, err := httpx.Post(ctx, httpx.Call{Client: a.client, Endpoint: ep, Path: completionsPath, Parts: body,
		Headers: httpx.Bearer(ep.APIKey), Now: a.now, Classify: httpx.OpenAIQuota})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("chat: %w", ctx.Err())
	}
	return data, err
}
