package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// probe GETs path on the server with the Host a probe from elsewhere
// sends (a pod IP, say) and no key, and returns the status and the body.
func probe(t *testing.T, addr, path string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "10.1.2.3:8420"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return resp.StatusCode, body
}

// checksOf lists /readyz's checks as "name=status".
func checksOf(body map[string]any) string {
	var out []string
	checks, _ := body["checks"].([]any)
	for _, c := range checks {
		m, _ := c.(map[string]any)
		out = append(out, m["name"].(string)+"="+m["status"].(string))
	}
	return strings.Join(out, " ")
}

// The embedded server says it serves and is ready, to a probe that sends
// no key and a Host of its own; `cairn --version` and `cairn version`
// say what was built.
func TestE2E_HealthAndVersion(t *testing.T) {
	dir := t.TempDir()
	srv := startServe(t, dir+"/data", writeProviderConfig(t, dir, newFakeChat(t, fakeKey)), fakeKey)
	if status, body := probe(t, srv.addr, "/healthz"); status != http.StatusOK || body["status"] != "serving" {
		t.Fatalf("/healthz: %d %v", status, body)
	}
	if status, body := probe(t, srv.addr, "/readyz"); status != http.StatusOK || body["status"] != "ready" || checksOf(body) != "store=ok" {
		t.Fatalf("/readyz: %d %v", status, body)
	}
	out, err := exec.Command(cairnBin, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "cairn version ") || !strings.Contains(string(out), "go1.") {
		t.Fatalf("cairn --version: %v %s", err, out)
	}
	out, err = exec.Command(cairnBin, "version").CombinedOutput()
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); err != nil || len(lines) < 3 || !strings.HasPrefix(lines[0], "cairn ") || !strings.HasPrefix(lines[1], "commit ") || !strings.HasPrefix(lines[2], "go go1.") {
		t.Fatalf("cairn version: %v %s", err, out)
	}
}

// scrape GETs /metrics (with key when not "") and returns the status and
// the text.
func scrape(t *testing.T, addr, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// A run through `cairn serve` is counted at /metrics: the run, its turn,
// the provider call with its API kind and provider, the tokens and the
// sessions in memory; no session id is a label.
func TestE2E_MetricsCountARun(t *testing.T) {
	dir := t.TempDir()
	fake := newFakeChat(t, fakeKey)
	fake.script(fakeStep{body: textResponse("chatcmpl-m1", "Counted.")})
	srv := startServe(t, dir+"/data", writeProviderConfig(t, dir, fake), fakeKey)
	c := srv.client()
	ctx := context.Background()
	created, err := c.CreateSession(ctx, api.CreateSessionParams{SessionID: "metered", Model: fakeModel()})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.StartRun(ctx, api.RunStartParams{SessionID: created.SessionID, Input: textInput("Count me.")})
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, c, created.SessionID, run.RunID)
	status, text := scrape(t, srv.addr, "")
	for _, want := range []string{
		`cairn_runs_total{status="completed"} 1`,
		`cairn_turns_total 1`,
		`cairn_provider_request_seconds_count{api_kind="chat_completions",provider="fake"} 1`,
		`cairn_tokens_total{kind="input"} `,
		`cairn_sessions_in_memory 1`,
		`cairn_queued_runs 0`,
		`cairn_blob_bytes `,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if status != http.StatusOK || strings.Contains(text, "metered") || strings.Contains(text, run.RunID) || strings.Contains(text, "cairn_blob_bytes 0\n") {
		t.Fatalf("/metrics: %d\n%s", status, text)
	}
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// A server without a built-in provider's key says so when it starts, and
// refuses a session on that provider saying where the key goes.
func TestE2E_MissingKeyIsFoundAtSessionCreate(t *testing.T) {
	dir := t.TempDir()
	srv := startServeWith(t, []string{"--data", dir + "/data"}, "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=")
	_, err := srv.client().CreateSession(context.Background(), api.CreateSessionParams{Model: core.ModelSelection{ProviderID: "openai", APIKind: core.APIChatCompletions, Model: "gpt-4o-mini"}})
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") || !strings.Contains(err.Error(), "cairn serve") {
		t.Fatalf("session/create on a provider without a key: %v", err)
	}
}
