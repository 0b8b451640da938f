// Package httpx is the HTTP exchange every adapter shares: one POST of raw
// request bytes, the response bytes back, and failures classified as
// retryable or terminal with the provider's retry advice, with the
// endpoint's secrets removed from every message.
package httpx

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
)

const (
	maxResponseBytes = 64 << 20 // responses are far smaller; this bounds a misbehaving server
	maxErrorBytes    = 64 << 10
	// MaxMessageBytes bounds the message of a provider error.
	MaxMessageBytes = 512
)

// Call is one POST to a provider.
type Call struct {
	Client   *http.Client
	Endpoint endpoint.Endpoint
	Path     string // appended to the endpoint's base URL, e.g. "/chat/completions"
	// Headers are the API kind's own headers (authentication, version). They
	// are set after the endpoint's, so they always win.
	Headers map[string]string
	Body    []byte
	// Parts, when set, is the body instead of Body, in parts sent one after
	// another without joining them (a long request need not be copied).
	Parts net.Buffers
	Now   func() time.Time
	// Classify adjusts the classification of a non-2xx answer for the API
	// kind (a quota 429 that waiting cannot fix, an explicit retry header);
	// nil keeps the default.
	Classify func(a *Answer)
	// Stream, when set, reads a 2xx text/event-stream answer as it
	// arrives and returns the response body it stands for (the adapter's
	// assembly), which Post returns instead of the stream's bytes. Its
	// errors become what StreamFailure makes of them.
	Stream func(r io.Reader) ([]byte, error)
}

// Answer is a non-2xx answer being classified.
type Answer struct {
	Status    int
	Header    http.Header
	Error     ErrorBody
	Retryable bool   // default: 408, 409, 429 and 5xx
	Message   string // default: the provider's message, or the status text
}

// ErrorBody is what an error body says: {"error":{"message","code","type"}},
// {"error":"…"}, {"message":"…"}, or plain text.
type ErrorBody struct {
	Message, Code, Type string
}

// PartsSize is the bytes of a body in parts.
func PartsSize(parts net.Buffers) int64 {
	var n int64
	for _, p := range parts {
		n += int64(len(p))
	}
	return n
}

// partsReader reads a body in parts without changing them, so each attempt
// reads the same parts without a copy of the list (at turn 10,000 of a chat,
// 40,000 of them).
type partsReader struct {
	parts   net.Buffers
	i, next int // the part being read, and the offset in it
}

func (r *partsReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.i < len(r.parts) {
		c := copy(p[n:], r.parts[r.i][r.next:])
		n += c
		r.next += c
		if r.next == len(r.parts[r.i]) {
			r.i, r.next = r.i+1, 0
		}
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Post sends the call and returns the 2xx body, or a *provider.Error
// (ctx.Err() when the caller gave up).
func Post(ctx context.Context, c Call) ([]byte, error) {
	ep := c.Endpoint
	target, err := ep.URL(c.Path)
	if err != nil {
		return nil, &provider.Error{Message: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(c.Body))
	if err != nil {
		// Do not quote err: it repeats the URL, which may carry credentials.
		return nil, &provider.Error{Message: "invalid endpoint base URL"}
	}
	if c.Parts != nil {
		req.GetBody = func() (io.ReadCloser, error) {
			return io.NopCloser(&partsReader{parts: c.Parts}), nil
		}
		req.Body, _ = req.GetBody()
		req.ContentLength = PartsSize(c.Parts)
	}
	setSorted(req.Header, ep.Headers) // a fixed order: the same request on every attempt
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	setSorted(req.Header, c.Headers)

	resp, err := noRedirects(c.Client).Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, transportError(err, ep, c.Path)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		// Neither the body nor Location is quoted: either may echo the
		// request, and the target is no business of the session's history.
		return nil, &provider.Error{Status: resp.StatusCode,
			Message: fmt.Sprintf("the provider answered HTTP %d, a redirect; provider calls do not follow redirects, so set the provider's baseUrl to the final address", resp.StatusCode)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
		return nil, c.statusError(resp, data)
	}
	if c.Stream != nil && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data, err := c.Stream(io.LimitReader(resp.Body, maxResponseBytes))
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, StreamFailure(err, ep, c.Classify)
		}
		return ep.RedactBody(data), nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, transportError(err, ep, c.Path)
	}
	if len(data) > maxResponseBytes {
		return nil, &provider.Error{Status: resp.StatusCode, Message: fmt.Sprintf("response body exceeds %d bytes", maxResponseBytes)}
	}
	// What the body says becomes errors, events and blobs: an echoed key
	// goes no further than here.
	return ep.RedactBody(data), nil
}

// noRedirects returns a copy of client that hands back a 3xx instead of
// following it. A redirect would re-send the conversation (and, to the same
// host, the key) to an address nobody configured: a plain-http LAN address,
// say, which the baseUrl rule refuses.
func noRedirects(client *http.Client) *http.Client {
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

func setSorted(h http.Header, values map[string]string) {
	names := make([]string, 0, len(values))
	for k := range values {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		h.Set(k, values[k])
	}
}

// transportError classifies a failure to get a response. Network failures and
// timeouts are retryable (the request may not have arrived); certificate
// failures are not (retrying cannot fix them), nor is an error that says so
// through a Retryable() bool method (a replay cassette that ran out, say).
func transportError(err error, ep endpoint.Endpoint, path string) *provider.Error {
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err // url.Error repeats the URL; keep only the cause
	}
	retryable := true
	var cert *tls.CertificateVerificationError
	var r interface{ Retryable() bool }
	switch {
	case errors.As(err, &cert):
		retryable = false
	case errors.As(err, &r):
		retryable = r.Retryable()
	}
	return &provider.Error{Retryable: retryable, Message: Redact("POST "+path+": "+inner.Error(), ep)}
}

// statusError classifies a non-2xx answer; Retry-After is kept either way so
// a host can honour it.
func (c Call) statusError(resp *http.Response, body []byte) *provider.Error {
	s := resp.StatusCode
	a := &Answer{Status: s, Header: resp.Header, Error: ParseErrorBody(body),
		Retryable: s == http.StatusTooManyRequests || s == http.StatusRequestTimeout || s == http.StatusConflict || s >= 500}
	a.Message = a.Error.Message
	if a.Message == "" {
		a.Message = http.StatusText(s)
	}
	if c.Classify != nil {
		c.Classify(a)
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	return &provider.Error{Status: s, Retryable: a.Retryable, RetryAfter: RetryAfter(resp.Header, now()), Message: Redact(a.Message, c.Endpoint)}
}

// ParseErrorBody extracts the provider's explanation from an error body.
func ParseErrorBody(body []byte) ErrorBody {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var obj struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && (obj.Message != "" || obj.Type != ""):
			var code string
			_ = json.Unmarshal(obj.Code, &code) // code may be null, absent or a number
			return ErrorBody{Message: obj.Message, Code: code, Type: obj.Type}
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return ErrorBody{Message: s}
		case v.Message != "":
			return ErrorBody{Message: v.Message}
		}
		return ErrorBody{}
	}
	text := strings.TrimSpace(string(body))
	if !utf8.ValidString(text) {
		return ErrorBody{}
	}
	return ErrorBody{Message: text}
}

// RetryAfter reads retry-after-ms (sent by Anthropic), then Retry-After as
// delay-seconds or an HTTP date; anything else, or a time already past, is
// no advice.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if ms := strings.TrimSpace(h.Get("retry-after-ms")); ms != "" {
		if f, err := strconv.ParseFloat(ms, 64); err == nil && f > 0 {
			return time.Duration(f * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// Redact removes the endpoint's secrets from a message (providers do echo
// keys back: "Incorrect API key provided: sk-…") and bounds its length.
func Redact(msg string, ep endpoint.Endpoint) string {
	msg = ep.Redact(msg)
	if len(msg) > MaxMessageBytes {
		cut := MaxMessageBytes
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}

// Bearer is the Authorization header of the OpenAI kinds (none without a key:
// a local server may need none).
func Bearer(key string) map[string]string {
	if key == "" {
		return nil
	}
	return map[string]string{"Authorization": "Bearer " + key}
}

// OpenAIQuota marks OpenAI's 429 for an exhausted billing quota terminal:
// waiting does not refill it.
func OpenAIQuota(a *Answer) {
	if a.Error.Code == "insufficient_quota" {
		a.Retryable = false
	}
}
