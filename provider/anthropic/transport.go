package anthropic

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/httpx"
)

const messagesPath = "/v1/messages"

// statusOverloaded is Anthropic's "overloaded_error" status.
const statusOverloaded = 529

// post sends body and returns the 2xx response body, or a classified error.
// The key travels only as x-api-key; the decoder is written for this version.
// A streamed answer is assembled as it arrives (onDelta hears its pieces)
// into the message it stands for.
func (a *Adapter) post(ctx context.Context, ep endpoint.Endpoint, body net.Buffers, onDelta func(provider.Delta)) ([]byte, error) {
	headers := map[string]string{"anthropic-version": AnthropicVersion}
	if ep.APIKey != "" {
		headers["x-api-key"] = ep.APIKey
	}
	stream := func(r io.Reader) ([]byte, error) { return assembleStream(r, onDelta) }
	data, err := httpx.Post(ctx, httpx.Call{Client: a.client, Endpoint: ep, Path: messagesPath, Parts: body,
		Headers: headers, Now: a.now, Classify: classify, Stream: stream})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("anthropic: %w", ctx.Err())
	}
	return data, err
}

// classify adds Anthropic's rules to the default: 529 and overloaded_error
// are retryable, and x-should-retry (which Anthropic sends for exactly this,
// and its SDKs obey) overrides the status. The error type prefixes the message.
func classify(a *httpx.Answer) {
	if a.Error.Message == "" && a.Status == statusOverloaded {
		a.Message = "Overloaded"
	}
	if a.Error.Type != "" {
		a.Message = a.Error.Type + ": " + a.Message
	}
	if a.Error.Type == "overloaded_error" {
		a.Retryable = true
	}
	switch strings.ToLower(a.Header.Get("x-should-retry")) {
	case "true":
		a.Retryable = true
	case "false":
		a.Retryable = false
	}
}
