package chat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/httpx"
)

// Adapter speaks Chat Completions over plain net/http. The endpoint is
// resolved on every call, just before I/O, and never stored.
type Adapter struct {
	resolver endpoint.Resolver
	client   *http.Client
	now      func() time.Time // reads Retry-After dates; replaced in tests
}

var _ provider.Adapter = (*Adapter)(nil)

// New returns an adapter. client nil means a plain &http.Client{}; pass one
// with a replay.Transport to run the live code path against a cassette.
// Timeouts come from the caller's context or the client.
func New(resolver endpoint.Resolver, client *http.Client) *Adapter {
	if client == nil {
		client = &http.Client{}
	}
	return &Adapter{resolver: resolver, client: client, now: time.Now}
}

// Generate lowers req, POSTs it to {BaseURL}/chat/completions, stores the
// response's native material in blobs and returns its facts.
//
// Errors: HTTP and transport failures are *provider.Error (Retryable set by
// classification); an undecodable 2xx body is a terminal *provider.Error; a
// cancelled ctx is returned as ctx.Err(); endpoint resolution errors are the
// endpoint package's typed errors; lowering errors say which entry failed.
func (a *Adapter) Generate(ctx context.Context, blobs blob.Store, req provider.Request) (provider.Output, error) {
	if req.Model.APIKind != "" && req.Model.APIKind != APIKind {
		return provider.Output{}, fmt.Errorf("chat: model selection has API kind %q, want %q", req.Model.APIKind, APIKind)
	}
	ep, err := endpoint.ResolveFor(a.resolver, req.Model.ProviderID, APIKind) // refuses a provider that does not admit this API kind
	if err != nil {
		return provider.Output{}, fmt.Errorf("chat: %w", err)
	}
	p, err := parseParams(req.Params)
	if err != nil {
		return provider.Output{}, err
	}
	body, segs, err := lowerParts(ctx, blobs, req, LowerOptions{ReasoningField: ep.ReasoningField, Stream: ep.Stream && !p.noStream})
	if err != nil {
		return provider.Output{}, err
	}
	resp, err := a.post(ctx, ep, body, req.OnDelta) // a stream's failures already classified
	if err != nil {
		return provider.Output{}, decodeFailure(err, ep)
	}
	if isStream(resp) { // a stream sent as another content type
		if resp, err = assembleStream(bytes.NewReader(resp), req.OnDelta); err != nil {
			return provider.Output{}, streamFailure(err, ep)
		}
	}
	out, err := Decode(ctx, blobs, resp)
	if err != nil {
		return provider.Output{}, decodeFailure(err, ep)
	}
	out.RequestBytes, out.Segments = httpx.PartsSize(body), segs
	return out, nil
}

// streamFailure classifies the failure of a stream sent as another
// content type as httpx does for one it reads (a cut stream is retryable,
// a reported error is classified like its answer); a chunk that is not
// one is a terminal provider error.
func streamFailure(err error, ep endpoint.Endpoint) error {
	return decodeFailure(httpx.StreamFailure(err, ep, httpx.OpenAIQuota), ep)
}

// decodeFailure: a 2xx body that is not a completion is a terminal provider
// error (resending the same request will not fix it); anything else (storing
// failed) is not the provider's fault and passes through.
func decodeFailure(err error, ep endpoint.Endpoint) error {
	var de *DecodeError
	if errors.As(err, &de) {
		return &provider.Error{Status: http.StatusOK, Message: httpx.Redact(de.Error(), ep)}
	}
	return err
}
