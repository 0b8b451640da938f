// Package endpoint resolves where and how to reach a provider — base URL,
// credentials, extra headers, the API kinds it speaks and per-endpoint wire
// choices — immediately before provider I/O. Nothing here is ever written to
// the session log or to CAS: the durable model selection names only a provider
// id, so keys can rotate and endpoints can move without rewriting history.
package endpoint

import (
	"fmt"
	"sort"
	"strings"
)

// Reasoning fields an endpoint may ask to have re-sent on assistant messages.
// Providers disagree (DeepSeek's thinking mode requires reasoning_content on
// tool-call turns, older models reject it), so it is a per-endpoint choice.
const (
	ReasoningNone    = ""                  // do not re-send reasoning
	ReasoningContent = "reasoning_content" // DeepSeek, xAI
	ReasoningPlain   = "reasoning"         // Groq
)

// Endpoint is everything needed to talk to one provider right now.
// It holds a secret: never log it with %#v of its fields; String redacts.
type Endpoint struct {
	// BaseURL has no trailing slash, e.g. "https://api.openai.com/v1" or
	// "https://api.anthropic.com". Each adapter appends its API's path.
	BaseURL string
	// APIKey is the credential, sent the way the API kind expects
	// ("Authorization: Bearer" for OpenAI kinds, "x-api-key" for Anthropic)
	// when non-empty. It is the only secret an Endpoint holds.
	APIKey string
	// Headers are extra, non-secret request headers (an organization id, a
	// beta flag). The config file refuses credential headers: secrets come
	// only from apiKeyEnv or apiKey.
	Headers map[string]string
	// ReasoningField names the assistant-message field reasoning is re-sent
	// under; "" means reasoning is kept in storage but not re-sent.
	ReasoningField string
	// APIKinds are the API kinds (core.APIChatCompletions, …) the provider
	// admits. Empty means unrestricted, which only hand-built endpoints
	// (Static) use; Default always fills it in.
	APIKinds []string
	// Stream asks for responses as streams, on every API kind; the adapter
	// assembles the same stored response either way. Default sets it
	// unless the provider's record says "stream": false (a server without
	// streaming); a session can still turn it off with providerParams.
	// Hand-built endpoints (Static) stream only when they say so.
	Stream bool
	// ContextWindow is the record's "contextWindow": the window, in tokens,
	// of the models it serves (0: see KnownContextWindow).
	ContextWindow int64
}

// Admits reports whether the endpoint may be used for apiKind.
func (e Endpoint) Admits(apiKind string) bool {
	if len(e.APIKinds) == 0 {
		return true
	}
	for _, k := range e.APIKinds {
		if k == apiKind {
			return true
		}
	}
	return false
}

// String describes the endpoint without secrets, so an accidental %v in a log
// line does not leak the key or header values.
func (e Endpoint) String() string {
	key := "none"
	if e.APIKey != "" {
		key = "[redacted]"
	}
	names := make([]string, 0, len(e.Headers))
	for k := range e.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	return fmt.Sprintf("Endpoint{BaseURL: %s, APIKey: %s, Headers: [%s], ReasoningField: %q, APIKinds: [%s]}",
		e.BaseURL, key, strings.Join(names, " "), e.ReasoningField, strings.Join(e.APIKinds, " "))
}

// GoString keeps %#v from printing the key as well.
func (e Endpoint) GoString() string { return e.String() }

// Resolver resolves a provider id to an Endpoint. Implementations re-read their
// sources on every call so rotated keys take effect without a restart.
type Resolver interface {
	Resolve(providerID string) (Endpoint, error)
}

// Static is a fixed Resolver, for tests and embedding.
type Static map[string]Endpoint

// Resolve returns the endpoint for id or an *UnknownProviderError.
func (s Static) Resolve(providerID string) (Endpoint, error) {
	ep, ok := s[providerID]
	if !ok {
		return Endpoint{}, &UnknownProviderError{ProviderID: providerID}
	}
	return ep, nil
}

// ResolveFor is Resolve for one API kind: see the package function ResolveFor.
func (s Static) ResolveFor(providerID, apiKind string) (Endpoint, error) {
	return ResolveFor(s, providerID, apiKind)
}
