package httpx

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/provider/endpoint"
)

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"":     0,
		"0":    0,
		"-5":   0,
		"120":  120 * time.Second,
		"soon": 0,
		now.Add(-time.Minute).Format(http.TimeFormat): 0,
		now.Add(time.Hour).Format(http.TimeFormat):    time.Hour,
	} {
		if got := RetryAfter(http.Header{"Retry-After": {h}}, now); got != want {
			t.Errorf("Retry-After %q = %v, want %v", h, got, want)
		}
	}
	if got := RetryAfter(http.Header{"Retry-After-Ms": {"250.5"}, "Retry-After": {"9"}}, now); got != 250500*time.Microsecond {
		t.Errorf("retry-after-ms wins over Retry-After: %v", got)
	}
}

func TestParseErrorBody(t *testing.T) {
	cases := map[string]ErrorBody{
		`{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}`: {Message: "quota", Type: "insufficient_quota", Code: "insufficient_quota"},
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`:           {Message: "Overloaded", Type: "overloaded_error"},
		`{"error":{"message":"x","code":null}}`:                                                 {Message: "x"},
		`{"error":"plain"}`:                                                                     {Message: "plain"},
		`{"message":"top"}`:                                                                     {Message: "top"},
		`upstream timed out`:                                                                    {Message: "upstream timed out"},
	}
	for body, want := range cases {
		if got := ParseErrorBody([]byte(body)); got != want {
			t.Errorf("%s → %+v, want %+v", body, got, want)
		}
	}
}

func TestRedactRemovesSecretsAndBoundsLength(t *testing.T) {
	ep := endpoint.Endpoint{APIKey: "sk-secret-0123456789", Headers: map[string]string{"X-Org": "org-abcdefgh"}}
	msg := Redact("Incorrect API key provided: sk-secret-0123456789 for org-abcdefgh", ep)
	if strings.Contains(msg, "sk-secret") || strings.Contains(msg, "org-abcdefgh") {
		t.Fatalf("secret left in %q", msg)
	}
	long := Redact(strings.Repeat("é", MaxMessageBytes), ep)
	if len(long) > MaxMessageBytes+len("…") || !strings.HasSuffix(long, "…") {
		t.Fatalf("unbounded message of %d bytes", len(long))
	}
}
