package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-agents/cairn/runtime"
)

// StreamPath is the Server-Sent Events stream of a session:
// GET /sessions/{id}/stream?after=SEQ.
const StreamPath = "/sessions/{id}/stream"

// streamWait is how long one wait for new events lasts before the stream
// sends a keep-alive comment (and finds out whether the client left).
const streamWait = 20 * time.Second

// DeltaHost is a host that passes on the pieces of streaming generations
// (runtime/local does; a Temporal gateway does not yet).
type DeltaHost interface {
	WatchDeltas(sessionID string) ([]runtime.GenerationDelta, <-chan runtime.GenerationDelta, func())
}

// serveStream sends a session's committed events after ?after (or the
// Last-Event-ID a reconnecting EventSource sends) as they commit: each as
// `event: committed`, `id:` its seq, and the same JSON as
// session/events/read in `data:`. While a generation streams its answer,
// its pieces go as `event: delta` ({runId, turn, kind, text}; no id: they
// are not events), starting with those sent before the client connected.
// A hosted server wants the universe's key as a Bearer token, as for
// /rpc. The stream ends when the client leaves.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	host, err := s.hosts.HostFor(r.Context(), BearerToken(r))
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
		writeRefusal(w, http.StatusUnauthorized, KindUnauthorized, "a valid API key is required: send Authorization: Bearer KEY")
		return
	}
	sessionID := r.PathValue("id")
	after, err := streamAfter(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, Response{JSONRPC: "2.0", ID: nullID, Error: newError(CodeInvalidParams, KindInvalidParams, err.Error())})
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeJSON(w, http.StatusInternalServerError, Response{JSONRPC: "2.0", ID: nullID, Error: newError(CodeInternal, KindInternal, "this connection cannot stream")})
		return
	}
	c := call{Server: s, host: host}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// The first page decides between an error answer and a stream.
	page, err := c.readEvents(ctx, EventsReadParams{SessionID: sessionID, After: after})
	if err != nil {
		writeJSON(w, streamStatus(s.toRPCError("session/events/read", err)), Response{JSONRPC: "2.0", ID: nullID, Error: s.toRPCError("session/events/read", err)})
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies: do not hold the stream back
	w.WriteHeader(http.StatusOK)
	writeEvents := func(evs []EventView) {
		for _, ev := range evs {
			data, _ := json.Marshal(ev)
			fmt.Fprintf(w, "id: %d\nevent: committed\ndata: %s\n\n", ev.Seq, data)
			after = ev.Seq
		}
	}
	writeDelta := func(d runtime.GenerationDelta) {
		data, _ := json.Marshal(d)
		fmt.Fprintf(w, "event: delta\ndata: %s\n\n", data)
	}
	writeEvents(page.Events)
	var deltas <-chan runtime.GenerationDelta
	if dh, ok := host.(DeltaHost); ok {
		past, ch, stop := dh.WatchDeltas(sessionID)
		defer stop()
		for _, d := range past {
			writeDelta(d)
		}
		deltas = ch
	}
	flusher.Flush()
	// Committed events are read in the background, so pieces go out as
	// they come while a read waits.
	type read struct {
		page EventsReadResult
		err  error
	}
	pages := make(chan read)
	go func() {
		cursor := after
		for {
			page, err := c.readEvents(ctx, EventsReadParams{SessionID: sessionID, After: cursor, WaitMs: streamWait.Milliseconds()})
			select {
			case pages <- read{page, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
			if n := len(page.Events); n > 0 {
				cursor = page.Events[n-1].Seq
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-deltas:
			writeDelta(d)
		case p := <-pages:
			if p.err != nil {
				if ctx.Err() == nil {
					data, _ := json.Marshal(s.toRPCError("session/events/read", p.err))
					fmt.Fprintf(w, "event: error\ndata: %s\n\n", data)
					flusher.Flush()
				}
				return
			}
			// A generation's pieces reach the hub before its result is
			// committed: the ones waiting go first, so a client that stops
			// at the run's end has had the whole answer.
			for drained := false; !drained; {
				select {
				case d := <-deltas:
					writeDelta(d)
				default:
					drained = true
				}
			}
			writeEvents(p.page.Events)
			if len(p.page.Events) == 0 {
				fmt.Fprint(w, ": waiting\n\n")
			}
		}
		flusher.Flush()
	}
}

// streamStatus is the HTTP status of an error answered before the stream
// began.
func streamStatus(e *Error) int {
	switch {
	case e.Data != nil && e.Data.Kind == KindNotFound:
		return http.StatusNotFound
	case e.Code == CodeInvalidParams:
		return http.StatusBadRequest
	case e.Code == CodeInternal:
		return http.StatusInternalServerError
	}
	return http.StatusConflict
}

// streamAfter is where a stream starts: ?after, else Last-Event-ID, else 0.
func streamAfter(r *http.Request) (int64, error) {
	v := r.URL.Query().Get("after")
	if v == "" {
		v = r.Header.Get("Last-Event-ID")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("after must be a seq: a whole number, 0 or more")
	}
	return n, nil
}

// ErrNoStream is a server without the session stream (an older one).
var ErrNoStream = errors.New("the server has no session stream")

// StreamEvent is one event of a session stream: a committed event, or a
// piece of the answer being streamed.
type StreamEvent struct {
	Committed *EventView
	Delta     *runtime.GenerationDelta
}

// Stream follows a session's committed events after after, and the pieces
// of answers being streamed, calling fn with each in order, until ctx
// ends, fn returns an error, or the server ends the stream (an *Error when
// it sent one).
func (c *Client) Stream(ctx context.Context, sessionID string, after int64, fn func(StreamEvent) error) error {
	url := strings.TrimSuffix(c.url, "/rpc") + "/sessions/" + sessionID + "/stream?after=" + strconv.FormatInt(after, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var out Response
		if json.NewDecoder(resp.Body).Decode(&out) == nil && out.Error != nil {
			return out.Error
		}
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			return ErrNoStream
		}
		return fmt.Errorf("stream: HTTP %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20) // an event's line may be large
	var kind, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != "" {
				if err := streamed(kind, data, fn); err != nil {
					return err
				}
			}
			kind, data = "", ""
		case strings.HasPrefix(line, "event: "):
			kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data += strings.TrimPrefix(line, "data: ")
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return sc.Err()
}

// streamed hands one stream event to fn.
func streamed(kind, data string, fn func(StreamEvent) error) error {
	switch kind {
	case "committed":
		var ev EventView
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return fmt.Errorf("stream: %w", err)
		}
		return fn(StreamEvent{Committed: &ev})
	case "delta":
		var d runtime.GenerationDelta
		if err := json.Unmarshal([]byte(data), &d); err != nil {
			return fmt.Errorf("stream: %w", err)
		}
		return fn(StreamEvent{Delta: &d})
	case "error":
		var e Error
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return fmt.Errorf("stream: %w", err)
		}
		return &e
	}
	return nil // a kind this client does not know
}
