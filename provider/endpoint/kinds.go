package endpoint

import (
	"errors"
	"slices"

	"github.com/cairn-agents/cairn/core"
)

// ResolveFor resolves providerID for a request of apiKind and refuses a
// provider that does not admit that kind with an *APIKindError. Adapters call
// this rather than Resolve: a provider configured for Chat Completions (a
// vLLM server, say) must not silently receive Anthropic Messages requests,
// and no other provider is tried in its place.
func ResolveFor(r Resolver, providerID, apiKind string) (Endpoint, error) {
	ep, err := r.Resolve(providerID)
	if err != nil {
		return Endpoint{}, err
	}
	if !ep.Admits(apiKind) {
		return Endpoint{}, &APIKindError{ProviderID: providerID, APIKind: apiKind, Admitted: append([]string(nil), ep.APIKinds...)}
	}
	return ep, nil
}

// knownAPIKinds are the values an "apiKinds" list may hold.
var knownAPIKinds = []string{core.APIChatCompletions, core.APIOpenAIResponses, core.APIAnthropicMessages}

// defaultCustomAPIKinds is what a configured provider without "apiKinds"
// admits. Records written before the field existed all described Chat
// Completions servers (Ollama, vLLM, DeepSeek, Groq, …); admitting more by
// default would send Responses or Anthropic requests to servers that never
// said they speak them.
var defaultCustomAPIKinds = []string{core.APIChatCompletions}

func isKnownAPIKind(k string) bool {
	for _, known := range knownAPIKinds {
		if k == known {
			return true
		}
	}
	return false
}

// CheckKnown refuses, with the resolver's typed error, a provider id the
// resolver does not know or one that does not admit apiKind. Any other
// outcome (a key not yet set, say) passes: the endpoint is resolved again
// before each call.
func CheckKnown(r Resolver, providerID, apiKind string) error {
	_, err := ResolveFor(r, providerID, apiKind)
	var unknown *UnknownProviderError
	var kind *APIKindError
	var missing *MissingKeyError
	switch {
	case errors.As(err, &unknown) || errors.As(err, &kind):
		return err
	case errors.As(err, &missing) && missing.APIKinds != nil && !slices.Contains(missing.APIKinds, apiKind):
		return &APIKindError{ProviderID: providerID, APIKind: apiKind, Admitted: missing.APIKinds}
	}
	return nil
}

// CheckUsable is CheckKnown that also refuses a provider whose key is not
// set now (*MissingKeyError): a session created on it would fail at its
// first run. A key set later is read then; nothing here is kept.
func CheckUsable(r Resolver, providerID, apiKind string) error {
	if err := CheckKnown(r, providerID, apiKind); err != nil {
		return err
	}
	_, err := ResolveFor(r, providerID, apiKind)
	var missing *MissingKeyError
	if errors.As(err, &missing) {
		return err
	}
	return nil
}
