package endpoint

import (
	"errors"
	"net/url"
	"strings"
)

// URL joins the base URL and an API path (e.g. "/chat/completions"). A query
// on the base URL stays after the joined path, where servers read it: Azure
// OpenAI's base https://x/openai/deployments/d?api-version=2024-10-21 becomes
// https://x/openai/deployments/d/chat/completions?api-version=2024-10-21. A
// fragment is never sent. The error never quotes the URL, which may carry
// credentials.
func (e Endpoint) URL(path string) (string, error) {
	u, err := url.Parse(e.BaseURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", errors.New("invalid endpoint base URL")
	}
	u.Fragment, u.RawFragment = "", ""
	// Join on the escaped form, so escapes in the base path survive as written.
	joined, err := url.Parse(strings.TrimRight(u.EscapedPath(), "/") + path)
	if err != nil {
		return "", errors.New("invalid endpoint path")
	}
	u.Path, u.RawPath = joined.Path, joined.RawPath
	return u.String(), nil
}
