package responses

import (
	"context"
	"fmt"

	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/httpx"
)

const responsesPath = "/responses"

// post sends body and returns the 2xx response body, or a classified error.
func (a *Adapter) post(ctx context.Context, ep endpoint.Endpoint, body []byte) ([]byte, error) {
	data, err := httpx.Post(ctx, httpx.Call{Client: a.client, Endpoint: ep, Path: responsesPath, Body: body,
		Headers: httpx.Bearer(ep.APIKey), Now: a.now, Classify: httpx.OpenAIQuota})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("responses: %w", ctx.Err())
	}
	return data, err
}
