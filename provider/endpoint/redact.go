package endpoint

import (
	"sort"
	"strings"
)

// Redact removes the endpoint's key from msg, and any header value long
// enough to be mistaken for one, replacing each with "[redacted]". Adapters
// pass every provider-supplied message through it before it reaches an
// error: providers do echo keys back ("Incorrect API key provided: sk-…").
// Header values are not secret by rule, but a short list of extra
// replacements costs nothing and guards against a record that breaks it.
func (e Endpoint) Redact(msg string) string {
	var secrets []string
	if e.APIKey != "" {
		secrets = append(secrets, e.APIKey)
	}
	for _, v := range e.Headers {
		// Short values ("on", "2024-01") are not worth mangling prose for.
		if len(v) >= 8 {
			secrets = append(secrets, v)
		}
	}
	// Longest first, so a secret containing another is removed whole.
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, "[redacted]")
	}
	return msg
}
