package endpoint

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// checkBaseURL parses a base URL and enforces the transport rule: https
// anywhere, plain http only on loopback, where nothing crosses the network.
// It never quotes the URL, which may carry credentials in its userinfo or
// query. source says where the URL came from, for the error.
func checkBaseURL(providerID, raw, source string, bad func(string) error) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, bad("baseUrl (from " + source + ") must be an absolute http or https URL")
	}
	if u.Scheme == "http" && !IsLoopback(u.Hostname()) {
		return nil, &InsecureBaseURLError{ProviderID: providerID, Host: u.Hostname(), Source: source}
	}
	return u, nil
}

// IsLoopback: "localhost", 127.0.0.0/8 and ::1 (also in its IPv4-mapped
// forms). Other names are not resolved: what a name resolves to can change
// under a running process, so only names that are loopback by definition count.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// credentialHeaders may not appear in a record's headers. Headers are
// non-secret by rule so that a credential has exactly one home: apiKeyEnv
// (rotated without editing the file) or apiKey, which each adapter sends in
// the form its API expects. A key pasted into headers would also bypass that
// form (x-api-key vs Authorization) and survive a key rotation unnoticed.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "Cookie"}

// CheckHeaders validates configured headers (a provider record's, an MCP
// server's): no credential, no line break; the reason never quotes a value.
func CheckHeaders(h map[string]string) string {
	for name, value := range h {
		if !validHeaderName(name) {
			// Not quoted: a malformed name may be a pasted value.
			return "headers: a header name is not a valid HTTP token"
		}
		for _, c := range credentialHeaders {
			if http.CanonicalHeaderKey(name) == c {
				return "headers: " + c + " carries a credential; headers are not secret, put the key in apiKeyEnv (or apiKey) instead"
			}
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			return "headers: a header value contains a line break or NUL"
		}
	}
	return ""
}

// validHeaderName: an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
