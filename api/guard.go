package api

import (
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Error kinds of the HTTP guard.
const (
	// KindForbidden: the request's Host or Origin is not this server's.
	KindForbidden = "forbidden"
	// KindUnsupportedMediaType: /rpc takes application/json bodies only.
	KindUnsupportedMediaType = "unsupported_media_type"
)

// guard refuses what a web page could forge against a server on the user's
// machine. A page may POST to 127.0.0.1 from any origin (a text/plain body
// needs no preflight), and a page on a name that its DNS rebinds to
// 127.0.0.1 is even same-origin to the browser: the Host header is then the
// page's name. So a request must name this server in Host, and an Origin, if
// the browser sent one, must be this server's own or one the operator lists.
type guard struct {
	hosts   map[string]bool // host names (lowercase, no port) besides localhost and loopback IPs
	origins map[string]bool // normalised scheme://host[:port]
}

func newGuard(hosts, origins []string) guard {
	g := guard{hosts: map[string]bool{}, origins: map[string]bool{}}
	for _, h := range hosts {
		g.hosts[normalHost(h)] = true
	}
	for _, o := range origins {
		g.origins[normalOrigin(o)] = true
	}
	return g
}

// normalHost lowercases a host name and drops a port, IPv6 brackets and a
// final dot, so "LOCALHOST.:8420" and "localhost" compare equal.
func normalHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

func normalOrigin(o string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o)), "/")
}

// hostAllowed reports whether a Host header names this server: localhost, a
// loopback IP or a listed name, on any port.
func (g guard) hostAllowed(host string) bool {
	h := normalHost(host)
	if h == "" {
		return false
	}
	if h == "localhost" || g.hosts[h] {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// originAllowed reports whether an Origin header (absent: not a browser's
// cross-origin request) is the server's own, i.e. the origin of the Host the
// request was sent to, or a listed one.
func (g guard) originAllowed(origin, host string) bool {
	if origin == "" {
		return true
	}
	if g.origins[normalOrigin(origin)] {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" || u.User != nil {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

// wrap applies the Host and Origin checks to every request of next.
func (g guard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !g.hostAllowed(r.Host):
			writeRefusal(w, http.StatusForbidden, KindForbidden,
				"this server does not answer for host "+quoteHeader(r.Host)+"; start it with --allow-host NAME to serve that name")
		case !g.originAllowed(r.Header.Get("Origin"), r.Host):
			writeRefusal(w, http.StatusForbidden, KindForbidden,
				"requests from origin "+quoteHeader(r.Header.Get("Origin"))+" are refused; start the server with --allow-origin ORIGIN to accept them")
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// isJSON reports whether a Content-Type header is application/json, with
// any parameters (charset=utf-8).
func isJSON(contentType string) bool { return sameMediaType(contentType, "application/json") }

// sameMediaType reports whether a Content-Type header names mediaType,
// with any parameters.
func sameMediaType(contentType, mediaType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == mediaType
}

func writeRefusal(w http.ResponseWriter, status int, kind, msg string) {
	code := CodeInvalidRequest
	if status == http.StatusForbidden {
		code = CodeDomain
	}
	writeJSON(w, status, Response{JSONRPC: "2.0", ID: nullID, Error: newError(code, kind, msg)})
}

// quoteHeader quotes a header value for an error message, bounded in size.
func quoteHeader(v string) string {
	if len(v) > 100 {
		v = v[:100] + "…"
	}
	return strconv.Quote(v)
}
