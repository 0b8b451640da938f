// Package api is Cairn's public interface: JSON-RPC 2.0 over HTTP POST /rpc,
// the server that maps methods onto a host, and a Go client.
package api

import (
	"encoding/json"
)

// Request is a JSON-RPC 2.0 request; a request without id is a notification.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// Response is a JSON-RPC 2.0 response.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Standard JSON-RPC error codes, and the one code Cairn uses for every
// domain error (its kind is in data.kind).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
	CodeDomain         = -32000
)

// Error kinds beyond the core's rejection kinds.
const (
	KindParseError     = "parse_error"
	KindInvalidRequest = "invalid_request"
	KindMethodNotFound = "method_not_found"
	KindInvalidParams  = "invalid_params"
	KindNotFound       = "not_found"
	KindMissingBlob    = "missing_blob"
	KindBodyTooLarge   = "body_too_large"
	KindUnsupported    = "unsupported"
	KindInternal       = "internal"
	KindUnauthorized   = "unauthorized"
)

// Error is a JSON-RPC error object; Data.Kind names the rejection.
type Error struct {
	Code    int        `json:"code"`
	Message string     `json:"message"`
	Data    *ErrorData `json:"data,omitempty"`
}

// ErrorData carries the stable kind and, for conflicts, what was expected.
type ErrorData struct {
	Kind     string   `json:"kind"`
	Expected *int64   `json:"expected,omitempty"`
	Actual   *int64   `json:"actual,omitempty"`
	Missing  []string `json:"missing,omitempty"`
	SafeSeq  *int64   `json:"safeSeq,omitempty"` // fork_point_inside_run: the largest safe fork point
}

func (e *Error) Error() string {
	if e.Data != nil {
		return e.Data.Kind + ": " + e.Message
	}
	return e.Message
}

// Kind returns data.kind, or "" when absent.
func (e *Error) Kind() string {
	if e.Data == nil {
		return ""
	}
	return e.Data.Kind
}

func newError(code int, kind, msg string) *Error {
	return &Error{Code: code, Message: msg, Data: &ErrorData{Kind: kind}}
}
