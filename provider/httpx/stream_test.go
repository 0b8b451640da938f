package httpx

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
)

// ReadEvents hands over each event's data: comments, names and ids are
// skipped, data lines are joined, and a last event without its blank line
// still counts; a read that fails mid-stream is a cut stream.
func TestReadEvents(t *testing.T) {
	stream := ": keep-alive\n\nevent: a\nid: 1\ndata: {\"x\":\n data:1}\n\ndata:two\n\n\n\ndata: last"
	var got []string
	if err := ReadEvents(strings.NewReader(stream), func(d []byte) (bool, error) {
		got = append(got, string(d))
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%q", got) != `["{\"x\":" "two" "last"]` {
		t.Fatalf("events %q", got)
	}
	got = nil
	_ = ReadEvents(strings.NewReader("data: 1\n\ndata: 2\n\n"), func(d []byte) (bool, error) {
		got = append(got, string(d))
		return true, nil
	})
	if len(got) != 1 {
		t.Fatalf("a stop did not stop: %q", got)
	}
	cut := io.MultiReader(strings.NewReader("data: 1\n\n"), failingReader{})
	if err := ReadEvents(cut, func([]byte) (bool, error) { return false, nil }); !errors.Is(err, ErrStreamIncomplete) {
		t.Fatalf("a failed read: %v", err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("connection reset by peer") }

// An error reported inside a stream is retried exactly when the same
// error as an HTTP answer would be; the API kind's rules still apply, and
// the endpoint's key never reaches the message.
func TestStreamFailure(t *testing.T) {
	ep := endpoint.Endpoint{APIKey: "sk-secret-123"}
	cases := []struct {
		err       error
		classify  func(*Answer)
		retryable bool
	}{
		{ErrStreamIncomplete, nil, true},
		{&StreamError{Body: ErrorBody{Type: "overloaded_error", Message: "Overloaded"}}, nil, true},
		{&StreamError{Body: ErrorBody{Type: "invalid_request_error", Message: "bad sk-secret-123"}}, nil, false},
		{&StreamError{Body: ErrorBody{Code: "server_error"}}, nil, true},
		{&StreamError{Body: ErrorBody{Code: "insufficient_quota"}}, OpenAIQuota, false},
		{&StreamError{Body: ErrorBody{Message: "something new"}}, nil, true},
	}
	for _, c := range cases {
		err := StreamFailure(c.err, ep, c.classify)
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Retryable != c.retryable || strings.Contains(pe.Message, "sk-secret") {
			t.Errorf("%v: got %v, want retryable %v", c.err, err, c.retryable)
		}
	}
	other := errors.New("decode")
	if StreamFailure(other, ep, nil) != other {
		t.Error("an adapter's own error must pass through")
	}
}

// Each event's data is its own: what fn keeps of one event is not
// overwritten by the next.
func TestReadEventsDataIsKept(t *testing.T) {
	var kept [][]byte
	_ = ReadEvents(strings.NewReader("data: first\n\ndata: SECOND\n\n"), func(d []byte) (bool, error) {
		kept = append(kept, d)
		return false, nil
	})
	if len(kept) != 2 || string(kept[0]) != "first" || string(kept[1]) != "SECOND" {
		t.Fatalf("kept %q", kept)
	}
}
