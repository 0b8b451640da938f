package mcptools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairn-agents/cairn/internal/mcptest"
	"github.com/cairn-agents/cairn/mcptools"
)

func writeConfig(t *testing.T, servers string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(`{"providers":{},"mcpServers":`+servers+`}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The config file's servers follow the provider endpoints' rules.
func TestLoadConfig_Rules(t *testing.T) {
	bad := map[string]string{
		"plain http off loopback": `{"a":{"url":"http://example.com/mcp"}}`,
		"credential header":       `{"a":{"url":"https://example.com/mcp","headers":{"Authorization":"Bearer x"}}}`,
		"key in the URL":          `{"a":{"url":"https://u:p@example.com/mcp"}}`,
		"key in the query":        `{"a":{"url":"https://example.com/mcp?token=t0ken"}}`,
		"misspelt field":          `{"a":{"url":"https://example.com/mcp","apiKeyEnvv":"K"}}`,
		"both url and command":    `{"a":{"url":"https://example.com/mcp","command":["x"]}}`,
		"neither":                 `{"a":{}}`,
		"server name with a dot":  `{"a.b":{"url":"https://example.com/mcp"}}`,
		"a command, not allowed":  `{"a":{"command":["/bin/true"]}}`,
	}
	for name, servers := range bad {
		_, err := mcptools.LoadConfig(writeConfig(t, servers), false)
		var ce *mcptools.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: got %v, want a *ConfigError", name, err)
		} else if strings.Contains(err.Error(), "Bearer x") || strings.Contains(err.Error(), "u:p") || strings.Contains(err.Error(), "t0ken") {
			t.Errorf("%s: the error quotes a credential: %v", name, err)
		}
	}
	got, err := mcptools.LoadConfig(writeConfig(t, `{"docs":{"url":"http://127.0.0.1:9/mcp","headers":{"X-Team":"a"},"apiKeyEnv":"K"},"local":{"command":["/bin/true"]}}`), true)
	if err != nil || len(got) != 2 {
		t.Fatalf("a good config: %v, %v", got, err)
	}
}

func httpServers(t *testing.T, key string, cfg mcptools.ServerConfig, env map[string]string) *mcptools.Servers {
	t.Helper()
	srv := httptest.NewServer(mcptest.HTTPHandler(func() *mcp.Server { return mcptest.NewServer() }, key))
	t.Cleanup(srv.Close)
	cfg.URL = srv.URL
	s := mcptools.New(map[string]mcptools.ServerConfig{"docs": cfg}, mcptools.Options{Getenv: func(k string) string { return env[k] }})
	t.Cleanup(s.Close)
	return s
}

// Over Streamable HTTP: tools in the server's order, calls and their
// results, the key read from the environment for each request.
func TestServers_HTTP(t *testing.T) {
	ctx := context.Background()
	s := httpServers(t, "k-123", mcptools.ServerConfig{APIKeyEnv: "DOCS_KEY", TimeoutMs: 300}, map[string]string{"DOCS_KEY": "k-123"})
	requireTools(t, s)
	requireCalls(t, s)
	_, err := s.CallTool(ctx, "docs", "slow", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call beyond timeoutMs: %v, want a deadline error", err)
	}
	if _, err := s.CallTool(ctx, "docs", "echo", json.RawMessage(`{"text":"again"}`)); err != nil {
		t.Fatalf("after a timeout the server is not reached again: %v", err)
	}
	if _, err := s.ListTools(ctx, "mail"); err == nil {
		t.Fatal("a server the config does not name was listed")
	}
}

// A key that is unset, or wrong, fails the call; it is never in the error.
func TestServers_HTTPKey(t *testing.T) {
	ctx := context.Background()
	unset := httpServers(t, "k-123", mcptools.ServerConfig{APIKeyEnv: "DOCS_KEY"}, nil)
	var missing *mcptools.MissingKeyError
	if _, err := unset.ListTools(ctx, "docs"); !errors.As(err, &missing) {
		t.Fatalf("unset key: %v, want a *MissingKeyError", err)
	}
	wrong := httpServers(t, "k-123", mcptools.ServerConfig{APIKeyEnv: "DOCS_KEY"}, map[string]string{"DOCS_KEY": "k-999"})
	_, err := wrong.ListTools(ctx, "docs")
	if err == nil || strings.Contains(err.Error(), "k-999") {
		t.Fatalf("wrong key: %v", err)
	}
	// A server that quotes the key back in its refusal: the error the
	// logs get does not carry it.
	const key = "sk-mcp-0123456789abcdef"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		reply, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID,
			"error": map[string]any{"code": -32001, "message": "bad key: " + r.Header.Get("Authorization")}})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(reply)
	}))
	t.Cleanup(echo.Close)
	s := mcptools.New(map[string]mcptools.ServerConfig{"docs": {URL: echo.URL, APIKeyEnv: "DOCS_KEY"}},
		mcptools.Options{Getenv: func(string) string { return key }})
	t.Cleanup(s.Close)
	if _, err := s.ListTools(ctx, "docs"); err == nil || strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "0123456789abcdef") {
		t.Fatalf("an echoed key reached the error: %v", err)
	}
}

// Over stdio: the same server as a program, with only the environment
// its config gives it.
func TestServers_Stdio(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcptest-server")
	if out, err := exec.Command("go", "build", "-o", bin, "../internal/mcptest/mcptest-server").CombinedOutput(); err != nil {
		t.Fatalf("building the test server: %v\n%s", err, out)
	}
	env := map[string]string{"PATH": os.Getenv("PATH"), mcptest.KeyEnv: "secret"}
	s := mcptools.New(map[string]mcptools.ServerConfig{"docs": {Command: []string{bin}}}, mcptools.Options{Getenv: func(k string) string { return env[k] }})
	t.Cleanup(s.Close)
	requireTools(t, s)
	requireCalls(t, s)
	if got := callText(t, s, "docs", "env", nil); got != "unset" {
		t.Fatalf("Cairn's environment reached the command: %s is %s", mcptest.KeyEnv, got)
	}
	passed := mcptools.New(map[string]mcptools.ServerConfig{"docs": {Command: []string{bin}, Env: map[string]string{mcptest.KeyEnv: "${" + mcptest.KeyEnv + "}"}}},
		mcptools.Options{Getenv: func(k string) string { return env[k] }})
	t.Cleanup(passed.Close)
	if got := callText(t, passed, "docs", "env", nil); got != "set" {
		t.Fatalf("the configured env did not reach the command: %s", got)
	}
}

func requireTools(t *testing.T, s *mcptools.Servers) {
	t.Helper()
	tools, err := s.ListTools(context.Background(), "docs")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range tools {
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "echo,env,fail,mixed,slow" { // the SDK's server lists by name
		t.Fatalf("tools %v, want the server's order", names)
	}
	if !strings.Contains(string(tools[0].Parameters), `"text"`) || tools[0].Description != "Echo a text back." {
		t.Fatalf("echo's definition: %+v", tools[0])
	}
}

func requireCalls(t *testing.T, s *mcptools.Servers) {
	t.Helper()
	if got := callText(t, s, "docs", "echo", json.RawMessage(`{"text":"hi"}`)); got != "echo: hi" {
		t.Fatalf("echo: %q", got)
	}
	out, err := s.CallTool(context.Background(), "docs", "fail", nil)
	if err != nil || !out.IsError || string(out.Content) != "the tool failed on purpose" {
		t.Fatalf("a tool error: %+v, %v", out, err)
	}
	mixed, err := s.CallTool(context.Background(), "docs", "mixed", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range mixed.Parts {
		got = append(got, p.MediaType+": "+string(p.Data))
	}
	want := []string{"text/plain; charset=utf-8: three parts", "text/plain; charset=utf-8: Resource file:///notes.md (text/markdown):\n# Notes", "image/png: \x89PNG"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("mixed result's parts %q, want %q", got, want)
	}
}

func callText(t *testing.T, s *mcptools.Servers, server, tool string, args json.RawMessage) string {
	t.Helper()
	out, err := s.CallTool(context.Background(), server, tool, args)
	if err != nil {
		t.Fatalf("%s.%s: %v", server, tool, err)
	}
	return string(out.Content)
}
