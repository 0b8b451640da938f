package replay

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// Transport is an http.RoundTripper that answers request n (0-based, in the
// order they arrive) with interaction n of its cassette. It is safe for
// concurrent use, though a cassette only makes sense for sequential calls.
type Transport struct {
	// RecordRequests keeps every request body seen; read them with Requests.
	RecordRequests bool
	// OnRequest, when set, is called with request n's body before it is
	// answered (not under the transport's lock, so it may block or call in).
	// The demo uses it to inject a steering message at a deterministic point.
	OnRequest func(n int, body []byte)

	mu           sync.Mutex
	interactions []Interaction
	next         int
	requests     [][]byte
}

var _ http.RoundTripper = (*Transport)(nil)

// New returns a transport that replays c's interactions in order.
func New(c *Cassette) *Transport {
	return &Transport{interactions: append([]Interaction(nil), c.Interactions...)}
}

// ExhaustedError: more requests arrived than the cassette recorded. Replaying
// again cannot help, so it reports itself as not retryable (adapters that
// classify transport errors check for a Retryable() bool method).
type ExhaustedError struct {
	Request      int // 0-based index of the request that found nothing left
	Interactions int
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("replay: cassette exhausted: request %d arrived but only %d interactions were recorded", e.Request+1, e.Interactions)
}

// Retryable is false: see ExhaustedError.
func (e *ExhaustedError) Retryable() bool { return false }

// RoundTrip answers req with the next recorded interaction.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("replay: read request body: %w", err)
		}
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}

	t.mu.Lock()
	n := t.next
	if n >= len(t.interactions) {
		t.mu.Unlock()
		return nil, &ExhaustedError{Request: n, Interactions: len(t.interactions)}
	}
	t.next++
	in := t.interactions[n]
	if t.RecordRequests {
		t.requests = append(t.requests, body)
	}
	hook := t.OnRequest
	t.mu.Unlock()

	if hook != nil {
		hook(n, body)
	}

	h := make(http.Header, len(in.Headers)+2)
	for k, v := range in.Headers {
		h.Set(k, v)
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.Itoa(len(in.Body)))
	return &http.Response{
		Status:        strconv.Itoa(in.Status) + " " + http.StatusText(in.Status),
		StatusCode:    in.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(in.Body)),
		ContentLength: int64(len(in.Body)),
		Request:       req,
	}, nil
}

// Requests returns copies of the request bodies seen so far (RecordRequests).
func (t *Transport) Requests() [][]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([][]byte, len(t.requests))
	for i, r := range t.requests {
		out[i] = append([]byte(nil), r...)
	}
	return out
}

// Remaining is the number of interactions not yet replayed.
func (t *Transport) Remaining() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.interactions) - t.next
}
