package responses

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	responsesPath = "/responses"
	// A response with a few large encrypted reasoning items is well under a
	// megabyte; the bound only stops a misbehaving server.
	maxResponseBytes = 64 << 20
	maxErrorBytes    = 64 << 10
	maxMessageBytes  = 512
)

// post sends body and returns the 2xx response body, or a classified error.
func (a *Adapter) post(ctx context.Context, ep endpoint.Endpoint, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.BaseURL+responsesPath, bytes.NewReader(body))
	if err != nil {
		// err repeats the URL, which may carry credentials (user:pass@host).
		return nil, &provider.Error{Message: "invalid endpoint base URL"}
	}
	// Endpoint headers first, in a fixed order, so the adapter's own headers
	// below always win and the request is the same on every attempt.
	names := make([]string, 0, len(ep.Headers))
	for k := range ep.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		req.Header.Set(k, ep.Headers[k])
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if ep.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+ep.APIKey)
	}

	resp, err := a.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("responses: %w", ctx.Err())
		}
		return nil, transportError(err, ep)
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
		return nil, a.statusError(resp, data, ep)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("responses: %w", ctx.Err())
		}
		return nil, transportError(err, ep)
	}
	if len(data) > maxResponseBytes {
		return nil, &provider.Error{Status: resp.StatusCode, Message: fmt.Sprintf("response body exceeds %d bytes", maxResponseBytes)}
	}
	return data, nil
}

// transportError classifies a failure to get a response at all. Network
// failures and timeouts are retryable: the request may not have arrived.
// Certificate failures are not (retrying cannot fix them), nor is an error
// that says so through a Retryable() bool method (an exhausted replay
// cassette, say).
func transportError(err error, ep endpoint.Endpoint) *provider.Error {
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
	return &provider.Error{Retryable: retryable, Message: redact("POST "+responsesPath+": "+inner.Error(), ep)}
}

// statusError classifies a non-2xx answer. 408, 409, 429 and 5xx are
// retryable (OpenAI uses 409 for a conflicting concurrent request and 5xx for
// overload), every other status is terminal: resending the same body gives
// the same 4xx. Retry-After is kept either way so a host can honour it.
func (a *Adapter) statusError(resp *http.Response, body []byte, ep endpoint.Endpoint) *provider.Error {
	msg, code := errorMessage(body)
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	s := resp.StatusCode
	retryable := s == http.StatusTooManyRequests || s == http.StatusRequestTimeout || s == http.StatusConflict || s >= 500
	if code == "insufficient_quota" {
		// OpenAI answers an exhausted billing quota with 429 too; waiting
		// does not refill it.
		retryable = false
	}
	return &provider.Error{
		Status:     s,
		Retryable:  retryable,
		RetryAfter: retryAfter(resp.Header.Get("Retry-After"), a.now()),
		Message:    redact(msg, ep),
	}
}

// errorMessage extracts the provider's explanation from an error body:
// {"error":{"message","code"}} (OpenAI and most compatible servers),
// {"error":"…"}, {"message":"…"}; otherwise the body itself when it is text.
func errorMessage(body []byte) (msg, code string) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var obj struct {
			Message string          `json:"message"`
			Code    json.RawMessage `json:"code"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			_ = json.Unmarshal(obj.Code, &code) // code may be null or absent
			return obj.Message, code
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s, ""
		case v.Message != "":
			return v.Message, ""
		}
		return "", ""
	}
	text := strings.TrimSpace(string(body))
	if !utf8.ValidString(text) {
		return "", ""
	}
	return text, ""
}

// retryAfter parses Retry-After as delay-seconds or an HTTP date; anything
// else, or a time already past, is no advice.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if n, err := strconv.ParseInt(h, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// redact removes the endpoint's secrets from a provider-supplied message
// (endpoint.Endpoint.Redact: providers do echo keys back, "Incorrect API key
// provided: sk-…") and bounds its length, since these messages end up in run
// failures and events.
func redact(msg string, ep endpoint.Endpoint) string {
	msg = ep.Redact(msg)
	if len(msg) > maxMessageBytes {
		cut := maxMessageBytes
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}
