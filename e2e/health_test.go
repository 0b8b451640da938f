package e2e

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
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
