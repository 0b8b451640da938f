package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// guarded is a request to a server and the answer it must get.
type guarded struct {
	name        string
	host        string // the Host header; "" keeps the server's address
	origin      string
	contentType string
	status      int
	kind        string // data.kind of a refusal
}

// send posts a session/create of id to url with the case's headers.
func (g guarded) send(t *testing.T, url, id string, header http.Header) (int, api.Response) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"session/create","params":{"sessionId":"` + id + `","model":{"providerId":"fake","apiKind":"chat_completions","model":"fake-1"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", g.contentType)
	if g.origin != "" {
		req.Header.Set("Origin", g.origin)
	}
	if g.host != "" {
		req.Host = g.host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out api.Response
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("HTTP %d with a body that is not a JSON-RPC response: %s", resp.StatusCode, data)
	}
	return resp.StatusCode, out
}

// A web page the user opens can POST to the embedded server (a text/plain
// body needs no CORS preflight) or reach it under its own DNS name rebound
// to 127.0.0.1. Neither may run anything: /rpc takes only JSON, a foreign
// Origin is refused, and so is a Host that is not the server's.
func TestGuard_ForgedBrowserRequestsAreRefused(t *testing.T) {
	e := newEnv(t)
	own := "http://" + strings.TrimPrefix(strings.TrimSuffix(e.url, "/rpc"), "http://")
	port := e.url[strings.LastIndex(e.url, ":")+1 : len(e.url)-len("/rpc")]
	cases := []guarded{
		{name: "text/plain from another page", contentType: "text/plain", origin: "http://evil.example", status: http.StatusForbidden, kind: api.KindForbidden},
		{name: "text/plain without origin", contentType: "text/plain;charset=UTF-8", status: http.StatusUnsupportedMediaType, kind: api.KindUnsupportedMediaType},
		{name: "form", contentType: "application/x-www-form-urlencoded", status: http.StatusUnsupportedMediaType, kind: api.KindUnsupportedMediaType},
		{name: "no content type", contentType: "", status: http.StatusUnsupportedMediaType, kind: api.KindUnsupportedMediaType},
		{name: "JSON from another origin", contentType: "application/json", origin: "http://evil.example", status: http.StatusForbidden, kind: api.KindForbidden},
		{name: "JSON from another port", contentType: "application/json", origin: "http://127.0.0.1:1", status: http.StatusForbidden, kind: api.KindForbidden},
		{name: "opaque origin", contentType: "application/json", origin: "null", status: http.StatusForbidden, kind: api.KindForbidden},
		{name: "DNS rebinding", contentType: "application/json", host: "evil.example:" + port, origin: "http://evil.example:" + port, status: http.StatusForbidden, kind: api.KindForbidden},
		{name: "foreign Host without origin", contentType: "application/json", host: "evil.example", status: http.StatusForbidden, kind: api.KindForbidden},
		{name: "localhost lookalike", contentType: "application/json", host: "localhost.evil.example:" + port, status: http.StatusForbidden, kind: api.KindForbidden},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := "forged-" + string(rune('a'+i))
			status, resp := tc.send(t, e.url, id, nil)
			if status != tc.status || resp.Error == nil || resp.Error.Kind() != tc.kind {
				t.Fatalf("HTTP %d %+v, want %d with kind %s", status, resp.Error, tc.status, tc.kind)
			}
			if _, err := e.c.ReadSession(bg, id); wantKind(t, err, api.KindNotFound) == nil {
				t.Fatal("the refused request created its session")
			}
		})
	}
	allowed := []guarded{
		{name: "the server's own origin", contentType: "application/json", origin: own},
		{name: "JSON with a charset", contentType: "application/json; charset=utf-8"},
		{name: "localhost on any port", contentType: "application/json", host: "localhost:9"},
		{name: "loopback IPv6", contentType: "application/json", host: "[::1]:" + port},
	}
	for i, tc := range allowed {
		t.Run(tc.name, func(t *testing.T) {
			status, resp := tc.send(t, e.url, "allowed-"+string(rune('a'+i)), nil)
			if status != http.StatusOK || resp.Error != nil {
				t.Fatalf("HTTP %d %+v, want 200", status, resp.Error)
			}
		})
	}
}

// Listed hosts and origins are served; the guard covers every route it
// wraps (the inspector's too), and comes before authentication in hosted mode.
func TestGuard_ListedHostsAndOriginsAndEveryRoute(t *testing.T) {
	host, _ := newUniverseHost(t)
	hosts := &keyedHosts{byKey: map[string]api.Host{"key-a": host}}
	srv := api.NewServerFor(hosts, api.ServerOptions{APIKinds: []string{core.APIChatCompletions},
		AllowedHosts: []string{"cairn.example"}, AllowedOrigins: []string{"https://app.example"}})
	mux := http.NewServeMux()
	mux.Handle("/rpc", srv.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "inspector") })
	ts := httptest.NewServer(srv.Protect(mux))
	t.Cleanup(ts.Close)
	key := http.Header{"Authorization": {"Bearer key-a"}}

	ok := []guarded{
		{name: "listed host", contentType: "application/json", host: "CAIRN.example:443", origin: "http://cairn.example:443"},
		{name: "listed origin", contentType: "application/json", origin: "https://app.example"},
	}
	for i, tc := range ok {
		if status, resp := tc.send(t, ts.URL+"/rpc", "listed-"+string(rune('a'+i)), key); status != http.StatusOK || resp.Error != nil {
			t.Fatalf("%s: HTTP %d %+v, want 200", tc.name, status, resp.Error)
		}
	}
	refused := guarded{contentType: "application/json", origin: "https://evil.example"}
	if status, resp := refused.send(t, ts.URL+"/rpc", "keyed", key); status != http.StatusForbidden || resp.Error.Kind() != api.KindForbidden {
		t.Fatalf("a foreign origin with a valid key: HTTP %d %+v, want 403", status, resp.Error)
	}
	if hosts.asked != len(ok) {
		t.Fatalf("the refused request reached the key lookup (%d lookups)", hosts.asked)
	}

	get := func(hostHeader, origin string) int {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/", nil)
		if hostHeader != "" {
			req.Host = hostHeader
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get("", ""); got != http.StatusOK {
		t.Fatalf("GET / from the server's own address: %d", got)
	}
	if got := get("evil.example", ""); got != http.StatusForbidden {
		t.Fatalf("GET / under a rebound name: %d, want 403", got)
	}
	if got := get("", "http://evil.example"); got != http.StatusForbidden {
		t.Fatalf("GET / from a foreign origin: %d, want 403", got)
	}
}
