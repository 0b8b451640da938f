package anthropic

import (
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

// Adapter speaks Anthropic Messages over plain net/http. The endpoint is
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

// Generate lowers req, POSTs it to {BaseURL}/v1/messages, continues a
// pause_turn answer up to MaxPauseContinuations times, stores the native
// material in blobs and returns its facts.
//
// Errors: HTTP and transport failures are *provider.Error (Retryable set by
// classification); an undecodable 2xx body is a terminal *provider.Error; a
// cancelled ctx is returned as ctx.Err(); endpoint resolution errors are the
// endpoint package's typed errors (a provider that does not admit this API
// kind included); invalid parameters are a *ParamsError; lowering errors say
// which entry failed. A failure on a continuation request fails the whole
// generation: the host's retry starts it again from the frozen context, which
// is the only state a retry can trust.
func (a *Adapter) Generate(ctx context.Context, blobs blob.Store, req provider.Request) (provider.Output, error) {
	if req.Model.APIKind != "" && req.Model.APIKind != APIKind {
		return provider.Output{}, fmt.Errorf("anthropic: model selection has API kind %q, want %q", req.Model.APIKind, APIKind)
	}
	p, err := parseParams(req.Params)
	if err != nil {
		return provider.Output{}, err
	}
	ep, err := endpoint.ResolveFor(a.resolver, req.Model.ProviderID, APIKind)
	if err != nil {
		return provider.Output{}, fmt.Errorf("anthropic: %w", err)
	}
	p.stream = ep.Stream && !p.noStream
	l, err := lower(ctx, blobs, req.Entries, req.Pieces.Scope(APIKind, req, ""))
	if err != nil {
		return provider.Output{}, err
	}
	body, segs, err := l.request(req.Model.Model, p, req.Tools)
	if err != nil {
		return provider.Output{}, err
	}
	var (
		resps     []response
		paused    []block                 // every block so far, sent back after a pause
		firstSize = httpx.PartsSize(body) // the first request's body: the one the next turn's prefix follows
	)
	for n := 0; ; n++ {
		if n > 0 {
			sent := l.conversation
			if len(paused) > 0 {
				if sent, err = l.withAssistant(paused); err != nil {
					return provider.Output{}, err
				}
			}
			if body, err = sent.bodyParts(req.Model.Model, p, req.Tools); err != nil {
				return provider.Output{}, err
			}
		}
		raw, err := a.post(ctx, ep, body, req.OnDelta)
		if err != nil {
			return provider.Output{}, decodeFailure(err, ep)
		}
		r, err := parseResponse(raw)
		if err != nil {
			return provider.Output{}, decodeFailure(err, ep)
		}
		resps = append(resps, r)
		paused = append(paused, r.blocks...)
		if r.stopReason != stopPauseTurn || n == MaxPauseContinuations {
			break
		}
	}

	last := resps[len(resps)-1]
	out, err := decodeTurn(ctx, blobs, resps, turnInfo{
		maxTokens:      p.effectiveMaxTokens(),
		pauseExhausted: last.stopReason == stopPauseTurn,
	})
	if err != nil {
		return provider.Output{}, decodeFailure(err, ep)
	}
	out.RequestBytes, out.Segments = firstSize, segs
	return out, nil
}

// decodeFailure: a 2xx body that is not a usable response is a terminal
// provider error (resending the same request will not fix it); anything else
// (storing failed) is not the provider's fault and passes through.
func decodeFailure(err error, ep endpoint.Endpoint) error {
	var de *DecodeError
	if errors.As(err, &de) {
		return &provider.Error{Status: http.StatusOK, Message: httpx.Redact(de.Error(), ep)}
	}
	return err
}
