package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/httpx"
)

// Adapter speaks the Responses API over plain net/http. The endpoint is
// resolved on every call, just before I/O, and never stored, so a rotated key
// takes effect on the next generation.
type Adapter struct {
	resolver endpoint.Resolver
	client   *http.Client
	now      func() time.Time // reads Retry-After dates; replaced in tests
}

var (
	_ provider.Adapter   = (*Adapter)(nil)
	_ provider.Compactor = (*Adapter)(nil)
)

// New returns an adapter. client nil means a plain &http.Client{}; pass one
// with a replay.Transport to run the live code path against a cassette.
// Timeouts come from the caller's context or the client.
func New(resolver endpoint.Resolver, client *http.Client) *Adapter {
	if client == nil {
		client = &http.Client{}
	}
	return &Adapter{resolver: resolver, client: client, now: time.Now}
}

// ValidateParams checks a session's provider parameters for this API kind;
// see the package-level ValidateParams.
func (a *Adapter) ValidateParams(raw json.RawMessage) error { return ValidateParams(raw) }

// Generate lowers req, POSTs it to {BaseURL}/responses, stores every output
// item in blobs and returns the response's facts.
//
// Errors: HTTP and transport failures are *provider.Error (Retryable set by
// classification); an undecodable 2xx body is a terminal *provider.Error; a
// cancelled ctx is returned as ctx.Err(); endpoint resolution errors are the
// endpoint package's typed errors; invalid parameters are *ParamsError and
// entries that cannot be lowered *UnsupportedEntryError, both before any I/O.
func (a *Adapter) Generate(ctx context.Context, blobs blob.Store, req provider.Request) (provider.Output, error) {
	if req.Model.APIKind != "" && req.Model.APIKind != APIKind {
		return provider.Output{}, fmt.Errorf("responses: model selection has API kind %q, want %q", req.Model.APIKind, APIKind)
	}
	// ResolveFor refuses a provider whose record does not admit this API
	// kind: a Chat Completions-only server must not receive Responses
	// requests, and no other provider is tried in its place.
	ep, epErr := endpoint.ResolveFor(a.resolver, req.Model.ProviderID, APIKind)
	// Lower before failing on the endpoint: a request that cannot be built
	// should say so even when the endpoint is not configured yet.
	body, segs, err := lowerParts(ctx, blobs, req, LowerOptions{Stream: epErr == nil && ep.Stream})
	if err != nil {
		return provider.Output{}, err
	}
	if epErr != nil {
		return provider.Output{}, fmt.Errorf("responses: %w", epErr)
	}
	resp, err := a.post(ctx, ep, responsesPath, body, req.OnDelta)
	if err != nil {
		return provider.Output{}, decodeFailure(err, ep)
	}
	out, err := Decode(ctx, blobs, resp)
	if err != nil {
		return provider.Output{}, decodeFailure(err, ep)
	}
	out.RequestBytes, out.Segments = httpx.PartsSize(body), segs
	return out, nil
}

// decodeFailure: a 2xx body (or stream) that is not a response is a
// terminal provider error, since resending the same request will not fix
// it; anything else (storing failed) is not the provider's fault and
// passes through.
func decodeFailure(err error, ep endpoint.Endpoint) error {
	var de *DecodeError
	if errors.As(err, &de) {
		return &provider.Error{Status: http.StatusOK, Message: httpx.Redact(de.Error(), ep)}
	}
	return err
}
