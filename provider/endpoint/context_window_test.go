package endpoint

import "testing"

func TestContextWindowFromTheRecordOrTheTable(t *testing.T) {
	for model, want := range map[string]int64{"gpt-4o-mini": 128_000, "gpt-4o": 128_000, "gpt-4.1-mini": 1_047_576,
		"gpt-5.1": 400_000, "claude-sonnet-4-5": 200_000, "o3-mini": 200_000, "llama3.1": 0, "": 0} {
		if got := KnownContextWindow(model); got != want {
			t.Errorf("KnownContextWindow(%q) = %d, want %d", model, got, want)
		}
	}
	p := writeConfig(t, `{"providers": {"local": {"baseUrl": "http://127.0.0.1:11434/v1", "contextWindow": 32768}}}`)
	r := New(p, env(nil))
	if got := ContextWindow(r, "local", "llama3.1"); got != 32768 {
		t.Fatalf("the record's window: %d", got)
	}
	if got := ContextWindow(r, "openai", "gpt-4o"); got != 128_000 {
		t.Fatalf("a built-in provider's known model: %d", got)
	}
	if got := ContextWindow(r, "nobody", "gpt-4o"); got != 128_000 {
		t.Fatalf("an unresolvable provider falls back to the table: %d", got)
	}
	bad := writeConfig(t, `{"providers": {"local": {"baseUrl": "http://127.0.0.1:11434/v1", "contextWindow": 0}}}`)
	if _, err := New(bad, env(nil)).Resolve("local"); err == nil {
		t.Fatal("a zero contextWindow was accepted")
	}
}
