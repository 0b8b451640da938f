package httpx

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
)

// A streamed answer is a Server-Sent Events body. Each adapter reads its
// API's events and assembles the response the same request would have had
// unstreamed; what can go wrong on the way is shared, and fails the
// generation the way an HTTP answer would.

// ErrStreamIncomplete is a stream that ended before its response did: like
// a dropped connection, worth a retry.
var ErrStreamIncomplete = errors.New("the response stream ended before the response was complete")

// StreamError is an error the provider reported inside a 2xx stream (an
// Anthropic "error" event, a Responses "error" or "response.failed", a
// Chat Completions chunk with "error").
type StreamError struct {
	Body ErrorBody
}

func (e *StreamError) Error() string {
	return "the response stream reported an error: " + e.message()
}

func (e *StreamError) message() string {
	switch {
	case e.Body.Type != "" && e.Body.Message != "":
		return e.Body.Type + ": " + e.Body.Message
	case e.Body.Message != "":
		return e.Body.Message
	case e.Body.Type != "":
		return e.Body.Type
	}
	return e.Body.Code
}

// streamStatus is the HTTP status the providers give the same error when
// they can still answer with one, so a reported error is retried exactly
// when the same error as an answer would be. An error the table does not
// know broke a stream that had started well: retryable, as a 500 is.
var streamStatus = map[string]int{
	"invalid_request_error":   http.StatusBadRequest,
	"authentication_error":    http.StatusUnauthorized,
	"permission_error":        http.StatusForbidden,
	"not_found_error":         http.StatusNotFound,
	"request_too_large":       http.StatusRequestEntityTooLarge,
	"rate_limit_error":        http.StatusTooManyRequests,
	"rate_limit_exceeded":     http.StatusTooManyRequests,
	"insufficient_quota":      http.StatusTooManyRequests,
	"overloaded_error":        529,
	"api_error":               http.StatusInternalServerError,
	"server_error":            http.StatusInternalServerError,
	"invalid_prompt":          http.StatusBadRequest,
	"context_length_exceeded": http.StatusBadRequest,
}

// StreamFailure turns what went wrong in a stream into the error a
// generation fails with: a cut stream is retryable, a reported error is
// classified like the answer it stands for, and anything else (an
// adapter's decode error) passes through. ctx errors pass through too.
func StreamFailure(err error, ep endpoint.Endpoint, classify func(*Answer)) error {
	if errors.Is(err, ErrStreamIncomplete) {
		return &provider.Error{Status: http.StatusOK, Retryable: true, Message: Redact(err.Error(), ep)}
	}
	var se *StreamError
	if !errors.As(err, &se) {
		return err
	}
	status, ok := streamStatus[se.Body.Code]
	if !ok {
		if status, ok = streamStatus[se.Body.Type]; !ok {
			status = http.StatusInternalServerError
		}
	}
	a := &Answer{Status: status, Header: http.Header{}, Error: se.Body,
		Retryable: status == http.StatusTooManyRequests || status >= 500, Message: se.message()}
	if classify != nil {
		classify(a)
	}
	return &provider.Error{Status: http.StatusOK, Retryable: a.Retryable,
		Message: Redact(se.Error(), ep)}
}

// ReadEvents calls fn with the data of each event of a Server-Sent Events
// stream, in order, until fn says stop or the stream ends. Comments, event
// names and ids are skipped (every API here repeats the event's name in
// its data); the lines of a multi-line data field are joined with "\n".
// fn may keep the data it is given: each event has its own.
func ReadEvents(r io.Reader, fn func(data []byte) (stop bool, err error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxResponseBytes)
	var data []byte
	pending := false
	dispatch := func() (bool, error) {
		if !pending {
			return false, nil
		}
		pending = false
		stop, err := fn(data)
		data = nil // fn may keep what it was given
		return stop, err
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if stop, err := dispatch(); stop || err != nil {
				return err
			}
			continue
		}
		value, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if pending {
			data = append(data, '\n')
		}
		data = append(data, value...)
		pending = true
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w (%v)", ErrStreamIncomplete, err)
	}
	_, err := dispatch() // a last event without its blank line
	return err
}
