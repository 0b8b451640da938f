package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// Client calls a Cairn server's JSON-RPC API.
type Client struct {
	url    string
	http   *http.Client
	apiKey string
	next   atomic.Int64
}

// clientTransport is the transport of clients made without an
// http.Client: net/http's default, except that it keeps as many idle
// connections to one server as to all. The default keeps two a host, and
// a program that follows many sessions at once holds a long-poll for
// each: it would open a connection for most of its calls.
var clientTransport = sync.OnceValue(func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = t.MaxIdleConns
	return t
})

// NewClient returns a client for a server address ("127.0.0.1:8420" or a
// full URL); httpClient may be nil. A Client is safe for concurrent use.
func NewClient(addr string, httpClient *http.Client) *Client {
	url := addr
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	url = strings.TrimSuffix(url, "/")
	if !strings.HasSuffix(url, "/rpc") {
		url += "/rpc"
	}
	if httpClient == nil {
		httpClient = &http.Client{Transport: clientTransport()}
	}
	return &Client{url: url, http: httpClient}
}

// WithAPIKey makes the client send Authorization: Bearer key (hosted mode).
func (c *Client) WithAPIKey(key string) *Client {
	c.apiKey = key
	return c
}

// Call invokes method with params and decodes the result into result (which
// may be nil). A JSON-RPC error is returned as *Error.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	id := c.next.Add(1)
	body, err := json.Marshal(Request{JSONRPC: "2.0", ID: json.RawMessage(fmt.Sprint(id)), Method: method, Params: p})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("cannot reach cairn at %s (is `cairn serve` running?): %w", c.url, err)
		}
		return fmt.Errorf("calling %s: %w", method, err)
	}
	defer resp.Body.Close()
	return decodeResponse(resp, method, result)
}

// decodeResponse reads a JSON-RPC response body into result, or returns
// its error (*Error).
func decodeResponse(resp *http.Response, what string, result any) error {
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading %s response: %w", what, err)
	}
	var out Response
	if err := json.Unmarshal(data, &out); err != nil {
		return fmt.Errorf("%s: HTTP %d with a body that is not a JSON-RPC response", what, resp.StatusCode)
	}
	if out.Error != nil {
		return out.Error
	}
	if result != nil {
		return json.Unmarshal(out.Result, result)
	}
	return nil
}

// CreateSession calls session/create.
func (c *Client) CreateSession(ctx context.Context, p CreateSessionParams) (CreateSessionResult, error) {
	var r CreateSessionResult
	return r, c.Call(ctx, MethodSessionCreate, p, &r)
}

// ReadSession calls session/read.
func (c *Client) ReadSession(ctx context.Context, sessionID string) (SessionReadResult, error) {
	var r SessionReadResult
	return r, c.Call(ctx, MethodSessionRead, SessionParams{SessionID: sessionID}, &r)
}

// ListSessions calls session/list.
func (c *Client) ListSessions(ctx context.Context, p SessionListParams) (SessionListResult, error) {
	var r SessionListResult
	return r, c.Call(ctx, MethodSessionList, p, &r)
}

// StartRun calls session/runs/start.
func (c *Client) StartRun(ctx context.Context, p RunStartParams) (RunStartResult, error) {
	var r RunStartResult
	return r, c.Call(ctx, MethodRunsStart, p, &r)
}

// ReadRun calls session/runs/read.
func (c *Client) ReadRun(ctx context.Context, sessionID, runID string) (RunReadResult, error) {
	var r RunReadResult
	return r, c.Call(ctx, MethodRunsRead, RunParams{SessionID: sessionID, RunID: runID}, &r)
}

// Steer calls session/runs/steer.
func (c *Client) Steer(ctx context.Context, p SteerParams) (SteerResult, error) {
	var r SteerResult
	return r, c.Call(ctx, MethodRunsSteer, p, &r)
}

// UpdateSession calls session/update.
func (c *Client) UpdateSession(ctx context.Context, p SessionUpdateParams) (SessionUpdateResult, error) {
	var r SessionUpdateResult
	return r, c.Call(ctx, MethodSessionUpdate, p, &r)
}

// RetryRun calls session/runs/retry.
func (c *Client) RetryRun(ctx context.Context, sessionID, runID string) (RunStartResult, error) {
	var r RunStartResult
	return r, c.Call(ctx, MethodRunsRetry, RunParams{SessionID: sessionID, RunID: runID}, &r)
}

// CancelRun calls session/runs/cancel.
func (c *Client) CancelRun(ctx context.Context, sessionID, runID string) (RunSummary, error) {
	var r RunSummary
	return r, c.Call(ctx, MethodRunsCancel, RunParams{SessionID: sessionID, RunID: runID}, &r)
}

// ReadEvents calls session/events/read.
func (c *Client) ReadEvents(ctx context.Context, p EventsReadParams) (EventsReadResult, error) {
	var r EventsReadResult
	return r, c.Call(ctx, MethodEventsRead, p, &r)
}

// ReadContext reads a session's whole active context with
// session/context/read, page after page, at one revision.
func (c *Client) ReadContext(ctx context.Context, sessionID string) (ContextReadResult, error) {
	return c.readWholeContext(ctx, ContextReadParams{SessionID: sessionID})
}

// ReadContextPage calls session/context/read for one page.
func (c *Client) ReadContextPage(ctx context.Context, p ContextReadParams) (ContextReadResult, error) {
	var r ContextReadResult
	return r, c.Call(ctx, MethodContextRead, p, &r)
}

// contextReadAttempts bounds how often readWholeContext starts again when
// the context changes while it pages.
const contextReadAttempts = 3

// readWholeContext reads every page of p's context (p.After and p.Limit
// are its own). A page at another revision than the first, or a cursor
// the context no longer has, means the context changed meanwhile: the read
// starts again, and after contextReadAttempts such changes it gives up.
func (c *Client) readWholeContext(ctx context.Context, p ContextReadParams) (ContextReadResult, error) {
	p.Limit = maxContextLimit
	for attempt := 1; ; attempt++ {
		p.After = ""
		var all ContextReadResult
		changed := false
		for !changed {
			page, err := c.ReadContextPage(ctx, p)
			var rpcErr *Error
			switch {
			case p.After != "" && errors.As(err, &rpcErr) && rpcErr.Kind() == KindInvalidParams:
				changed = true // our cursor's entry has left the context
				continue
			case err != nil:
				return ContextReadResult{}, err
			case p.After != "" && page.Revision != all.Revision:
				changed = true
				continue
			}
			all.Revision = page.Revision
			all.Entries = append(all.Entries, page.Entries...)
			if page.Cursor == "" {
				if all.Entries == nil {
					all.Entries = []core.Entry{}
				}
				return all, nil
			}
			p.After = page.Cursor
		}
		if attempt == contextReadAttempts {
			return ContextReadResult{}, fmt.Errorf("session/context/read: the context of %s changed while it was read, %d times", p.SessionID, attempt)
		}
	}
}

// AppendContext calls session/context/append.
func (c *Client) AppendContext(ctx context.Context, p ContextAppendParams) (ContextAppendResult, error) {
	var r ContextAppendResult
	return r, c.Call(ctx, MethodContextAppend, p, &r)
}

// RemoveContext calls session/context/remove.
func (c *Client) RemoveContext(ctx context.Context, p ContextRemoveParams) (ContextRemoveResult, error) {
	var r ContextRemoveResult
	return r, c.Call(ctx, MethodContextRemove, p, &r)
}

// PutBlob calls blobs/put.
func (c *Client) PutBlob(ctx context.Context, data []byte, mediaType string) (BlobPutResult, error) {
	if data == nil {
		data = []byte{} // sent as "", an empty blob; nil would be absent data
	}
	var r BlobPutResult
	return r, c.Call(ctx, MethodBlobsPut, BlobPutParams{Data: data, MediaType: mediaType}, &r)
}

// ReadBlob calls blobs/read.
func (c *Client) ReadBlob(ctx context.Context, p BlobReadParams) (BlobReadResult, error) {
	var r BlobReadResult
	return r, c.Call(ctx, MethodBlobsRead, p, &r)
}

// Parts of a blob Get asks for per call: well inside the default response
// limit once base64-encoded, and smaller while a server refuses them.
const (
	blobPart    = 8 << 20
	minBlobPart = 64 << 10
)

// Get reads a blob's bytes (blobs/read, in parts), so the client can serve
// as a read-only blob source for views.
func (c *Client) Get(ctx context.Context, d content.Digest) ([]byte, error) {
	var out []byte
	part := int64(blobPart)
	for {
		length := part
		r, err := c.ReadBlob(ctx, BlobReadParams{Ref: DigestRef(d), Offset: int64(len(out)), Length: &length})
		var rpcErr *Error
		if errors.As(err, &rpcErr) && rpcErr.Kind() == KindResponseTooLarge && part > minBlobPart {
			part /= 4
			continue
		}
		if err != nil {
			return nil, err
		}
		if out == nil {
			// The size is the server's word: it sizes the buffer only as far
			// as the first part's bytes vouch for, so a lying server cannot
			// make the client allocate what it never sends.
			out = make([]byte, 0, min(max(r.Size, 0), int64(len(r.Data))*4+blobPart))
		}
		out = append(out, r.Data...)
		if int64(len(out)) >= r.Size || len(r.Data) == 0 {
			return out, nil
		}
	}
}
