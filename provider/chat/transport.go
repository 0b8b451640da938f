package chat

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
	"github.com/cairn-agents/cairn/provider/rawjson"
)

const (
	completionsPath  = "/chat/completions"
	maxResponseBytes = 64 << 20 // a completion is far smaller; this bounds a misbehaving server
	maxErrorBytes    = 64 << 10
	maxMessageBytes  = 512
)

// post sends body and returns the 2xx response body, or a classified error.
func (a *Adapter) post(ctx context.Context, ep endpoint.Endpoint, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.BaseURL+completionsPath, bytes.NewReader(body))
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
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if ep.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+ep.APIKey)
	}

	resp, err := a.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("chat: %w", ctx.Err())
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
			return nil, fmt.Errorf("chat: %w", ctx.Err())
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
	return &provider.Error{Retryable: retryable, Message: redact("POST "+completionsPath+": "+inner.Error(), ep)}
}

// statusError classifies a non-2xx answer: 408, 409, 429 and 5xx are
// retryable, other statuses terminal. Retry-After is honoured either way.
func (a *Adapter) statusError(resp *http.Response, body []byte, ep endpoint.Endpoint) *provider.Error {
	msg, code := errorMessage(body)
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	s := resp.StatusCode
	retryable := s == http.StatusTooManyRequests || s == http.StatusRequestTimeout || s == http.StatusConflict || s >= 500
	if code == "insufficient_quota" {
		// OpenAI sends 429 for an exhausted billing quota; waiting does not help.
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
// {"error":{"message","code"}} (OpenAI and most compatibles), {"error":"…"},
// {"message":"…"}; otherwise a short prefix of a non-JSON body.
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
			code, _ = rawjson.String(obj.Code)
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

// retryAfter parses Retry-After as delay-seconds or an HTTP date.
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

// redact removes the endpoint's secrets (the key and header values) from a
// message and bounds its length. Providers do echo keys back ("Incorrect API
// key provided: sk-…").
func redact(msg string, ep endpoint.Endpoint) string {
	var secrets []string
	if ep.APIKey != "" {
		secrets = append(secrets, ep.APIKey)
	}
	for _, v := range ep.Headers {
		// Header values may be keys (Azure's api-key); short ones ("on",
		// "2024-01") are not worth mangling prose for.
		if len(v) >= 8 {
			secrets = append(secrets, v)
		}
	}
	// Longest first, so a secret containing another is removed whole.
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, "[redacted]")
	}
	if len(msg) > maxMessageBytes {
		cut := maxMessageBytes
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}
