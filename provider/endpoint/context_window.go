package endpoint

import "strings"

// knownWindows are the context windows, in tokens, of well-known models, by
// name prefix; the longest matching prefix wins. A provider record's
// "contextWindow" overrides them (a local server's, a model not listed).
var knownWindows = []struct {
	prefix string
	tokens int64
}{
	{"gpt-3.5-turbo", 16_385},
	{"gpt-4-turbo", 128_000},
	{"gpt-4o", 128_000},
	{"gpt-4.1", 1_047_576},
	{"gpt-5", 400_000},
	{"o1", 200_000},
	{"o3", 200_000},
	{"o4-mini", 200_000},
	{"claude-", 200_000},
}

// KnownContextWindow is model's context window from the built-in table; 0
// when the model is not known.
func KnownContextWindow(model string) int64 {
	var best int64
	n := 0
	for _, w := range knownWindows {
		if strings.HasPrefix(model, w.prefix) && len(w.prefix) > n {
			best, n = w.tokens, len(w.prefix)
		}
	}
	return best
}

// ContextWindow is the context window of model on provider providerID: the
// provider record's "contextWindow" when it gives one, else the built-in
// table's; 0 when neither knows (then no request is refused for its size).
func ContextWindow(r Resolver, providerID, model string) int64 {
	if ep, err := r.Resolve(providerID); err == nil && ep.ContextWindow > 0 {
		return ep.ContextWindow
	}
	return KnownContextWindow(model)
}
