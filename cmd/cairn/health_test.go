package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// /readyz fails with the name of the check that failed, never its error's
// words (they may name hosts and users); /healthz answers regardless, and
// every other path goes on to the API.
func TestReadyzNamesWhatFailed(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "api") })
	var logged strings.Builder
	h := withHealth(next, []readyCheck{
		{"store", func(context.Context) error { return nil }},
		{"objects", func(context.Context) error { return errors.New("dial tcp s3.internal: user=admin refused") }},
	}, slog.New(slog.NewTextHandler(&logged, nil)))
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable ||
		body != `{"status":"not ready","checks":[{"name":"store","status":"ok"},{"name":"objects","status":"failing"}]}`+"\n" {
		t.Fatalf("/readyz: %d %s", code, body)
	} else if strings.Contains(body, "admin") || !strings.Contains(logged.String(), "s3.internal") {
		t.Fatalf("the error went to the client, or not to the log: %s / %s", body, logged.String())
	}
	if code, body := get("/healthz"); code != http.StatusOK || !strings.Contains(body, `"serving"`) {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	if code, body := get("/rpc"); code != http.StatusOK || body != "api" {
		t.Fatalf("/rpc: %d %s", code, body)
	}
}
