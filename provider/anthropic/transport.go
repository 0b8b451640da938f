package anthropic

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
	messagesPath     = "/v1/messages"
	maxResponseBytes = 64 << 20 // a response is far smaller; this bounds a misbehaving server
	maxErrorBytes    = 64 << 10
	maxMessageBytes  = 512
)

// statusOverloaded is Anthropic's "overloaded_error" status.
const statusOverloaded = 529

// post sends body and returns the 2xx response body, or a classified error.
func (a *Adapter) post(ctx context.Context, ep endpoint.Endpoint, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.BaseURL+messagesPath, bytes.NewReader(body))
	if err != nil {
		// Do not quote err: it repeats the URL, which may carry credentials.
		return nil, &provider.Error{Message: "invalid endpoint base URL"}
	}
	names := make([]string, 0, len(ep.Headers))
	for k := range ep.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		req.Header.Set(k, ep.Headers[k])
	}
	// Set after the endpoint's headers: the decoder is written for this
	// version and these media types, and the key travels only as x-api-key.
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("anthropic-version", AnthropicVersion)
	if ep.APIKey != "" {
		req.Header.Set("x-api-key", ep.APIKey)
	}

	resp, err := a.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("anthropic: %w", ctx.Err())
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
			return nil, fmt.Errorf("anthropic: %w", ctx.Err())
		}
		return nil, transportError(err, ep)
	}
	if len(data) > maxResponseBytes {
		return nil, &provider.Error{Status: resp.StatusCode, Message: fmt.Sprintf("response body exceeds %d bytes", maxResponseBytes)}
	}
	return data, nil
}

// transportError classifies a failure to get a response. Network failures and
// timeouts are retryable; certificate failures are not (retrying cannot fix
// them), nor is an error that says so through a Retryable() bool method (a
// replay cassette that ran out, say).
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
	return &provider.Error{Retryable: retryable, Message: redact("POST "+messagesPath+": "+inner.Error(), ep)}
}

// statusError classifies a non-2xx answer. 408, 409, 429, 5xx and 529
// (overloaded) are retryable, other statuses terminal — unless the server
// says otherwise with x-should-retry, which Anthropic sends for exactly this
// purpose and its own SDKs obey. Retry-After is honoured either way.
func (a *Adapter) statusError(resp *http.Response, body []byte, ep endpoint.Endpoint) *provider.Error {
	msg, errType := errorMessage(body)
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
		if resp.StatusCode == statusOverloaded {
			msg = "Overloaded"
		}
	}
	if errType != "" {
		msg = errType + ": " + msg
	}
	s := resp.StatusCode
	retryable := s == http.StatusTooManyRequests || s == http.StatusRequestTimeout || s == http.StatusConflict || s >= 500 || errType == "overloaded_error"
	switch strings.ToLower(resp.Header.Get("x-should-retry")) {
	case "true":
		retryable = true
	case "false":
		retryable = false
	}
	return &provider.Error{
		Status:     s,
		Retryable:  retryable,
		RetryAfter: retryAfter(resp.Header, a.now()),
		Message:    redact(msg, ep),
	}
}

// errorMessage extracts the explanation from an error body:
// {"type":"error","error":{"type":"…","message":"…"}} (Anthropic), or
// {"error":"…"} / {"message":"…"} from proxies; otherwise a short prefix of a
// non-JSON body.
func errorMessage(body []byte) (msg, errType string) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var obj struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && (obj.Message != "" || obj.Type != ""):
			return obj.Message, obj.Type
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

// retryAfter reads retry-after-ms (what Anthropic's SDKs read first), then
// Retry-After as delay-seconds or an HTTP date.
func retryAfter(h http.Header, now time.Time) time.Duration {
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

// redact removes the endpoint's secrets from a message and bounds its length.
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
