package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run whose input cannot fit the model's context window (here the
// provider record's) is refused before anything is sent or stored, with a
// typed error that says why.
func TestE2E_AnInputOverTheContextWindowIsRefused(t *testing.T) {
	fake := newFakeChat(t, fakeKey)
	fake.script(fakeStep{body: textResponse("chatcmpl-1", "small is fine")})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "providers.json")
	record := `{"providers":{"fake":{"baseUrl":"` + fake.baseURL() + `","apiKeyEnv":"FAKE_CHAT_KEY","contextWindow":1000}}}`
	if err := os.WriteFile(cfg, []byte(record), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, dir+"/data", cfg, fakeKey)
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, []byte(strings.Repeat("a long line of log output\n", 400)), 0o600); err != nil { // ~10 KB
		t.Fatal(err)
	}
	out, err := runCairn(t, nil, "chat", "--addr", srv.addr, "--provider", "fake", "--model", "m", "--file", big)
	if err == nil || !strings.Contains(err.Error(), "context_window_exceeded") || !strings.Contains(err.Error(), "context window of 1000 tokens") {
		t.Fatalf("chat with an input over the window: %v\n%s", err, out)
	}
	if n := len(fake.bodies()); n != 0 {
		t.Fatalf("%d requests reached the provider", n)
	}
	session := strings.Fields(out)[1]
	out, err = runCairn(t, nil, "chat", "--addr", srv.addr, "--session", session, "what fits")
	if err != nil || !strings.Contains(out, "small is fine") {
		t.Fatalf("a run that fits, after the refused one: %v\n%s", err, out)
	}
	if body := fake.bodies()[0]; strings.Contains(string(body), "a long line of log output") {
		t.Fatal("the refused input reached the context")
	}
}
