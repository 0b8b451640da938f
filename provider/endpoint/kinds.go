package endpoint

import "github.com/cairn-agents/cairn/core"

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
