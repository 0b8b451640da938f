package endpoint

import (
	"sort"
	"strings"
)

// MinKeyPrefix is the shortest start of a secret that is redacted on its
// own: providers echo keys back whole, lower-cased, or cut short
// ("Incorrect API key provided: sk-proj-abc…"), and twelve characters of a
// key are already enough to narrow a search for it.
const MinKeyPrefix = 12

// minBodyKey is the shortest key redacted in a response body. Local servers
// take placeholder keys ("ollama", "none") that ordinary model output
// mentions; mangling those words would corrupt answers and protect nothing.
const minBodyKey = 8

const redacted = "[redacted]"

// secretChars is how many characters past a key's vendor prefix a cut-short
// key must keep to count as a leak of it.
const secretChars = 4

// publicPrefix is the length of a key's vendor prefix: up to the last "-"
// or "_" among its first 16 characters ("sk-ant-api03-", "sk-proj-"). Every
// key of the vendor starts with it, so an answer quoting it ("keys look
// like sk-ant-api03-…") leaks nothing and is left as written.
func publicPrefix(key string) int {
	return strings.LastIndexAny(key[:min(len(key), 16)], "-_") + 1
}

// Redact removes the endpoint's key from msg, and any header value long
// enough to be mistaken for one, in every form a provider echoes them (see
// RedactSecret). Adapters pass every provider-supplied message through it
// before it reaches an error. Header values are not secret by rule, but a
// short list of extra replacements costs nothing and guards against a record
// that breaks it.
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
		msg = RedactSecret(msg, s)
	}
	return msg
}

// RedactBody removes the endpoint's key from a response body that will be
// decoded and stored, in the forms RedactSecret covers. Only the key: header
// values (an api-version date) legitimately occur in answers. The result
// stays valid JSON, since "[redacted]" needs no escaping and replaces bytes
// of a key, which has no quotes or backslashes.
func (e Endpoint) RedactBody(body []byte) []byte {
	if len(e.APIKey) < minBodyKey || strings.ContainsAny(e.APIKey, "\"\\") {
		return body
	}
	text := string(body)
	if out := RedactSecret(text, e.APIKey); out != text {
		return []byte(out)
	}
	return body
}

// RedactSecret replaces every leak of secret in text with "[redacted]": the
// secret itself, in any ASCII letter case, or any start of it at least
// MinKeyPrefix characters long and reaching secretChars past its vendor
// prefix (the whole secret when it is shorter), again in any case. Each
// leak is replaced with its longest match.
func RedactSecret(text, secret string) string {
	if secret == "" {
		return text
	}
	// Folding only ASCII letters keeps byte offsets equal in both copies.
	lt, ls := lowerASCII(text), lowerASCII(secret)
	head := ls[:min(len(ls), max(MinKeyPrefix, publicPrefix(ls)+secretChars))]
	var b strings.Builder
	from := 0 // text before from is written to b (or redacted)
	for {
		i := strings.Index(lt[from:], head)
		if i < 0 {
			break
		}
		i += from
		n := len(head)
		for n < len(ls) && i+n < len(lt) && lt[i+n] == ls[n] {
			n++
		}
		b.WriteString(text[from:i])
		b.WriteString(redacted)
		from = i + n
	}
	if from == 0 {
		return text
	}
	b.WriteString(text[from:])
	return b.String()
}

// lowerASCII lower-cases ASCII letters only, byte by byte (invalid UTF-8
// stays as it is, so offsets never move).
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
