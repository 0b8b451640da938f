package endpoint

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

func TestResolveForChecksAPIKinds(t *testing.T) {
	p := writeConfig(t, `{"providers": {
		"ollama":     {"baseUrl": "http://localhost:11434/v1"},
		"openrouter": {"baseUrl": "https://openrouter.ai/api", "apiKeyEnv": "OR_KEY", "apiKinds": ["anthropic_messages", "chat_completions"]},
		"openai":     {"apiKinds": ["openai_responses"]}
	}}`)
	r := New(p, env(map[string]string{OpenAIKeyEnv: secret, AnthropicKeyEnv: secret, "OR_KEY": secret}))
	cases := []struct {
		provider, kind string
		ok             bool
	}{
		{"anthropic", core.APIAnthropicMessages, true},
		{"anthropic", core.APIChatCompletions, false},
		{"anthropic", core.APIOpenAIResponses, false},
		{"openai", core.APIOpenAIResponses, true},
		{"openai", core.APIChatCompletions, false}, // narrowed by the record
		{"openai", core.APIAnthropicMessages, false},
		{"ollama", core.APIChatCompletions, true}, // the default for records
		{"ollama", core.APIAnthropicMessages, false},
		{"ollama", core.APIOpenAIResponses, false},
		{"openrouter", core.APIAnthropicMessages, true},
		{"openrouter", core.APIChatCompletions, true},
		{"openrouter", core.APIOpenAIResponses, false},
		{"openrouter", "made_up", false},
	}
	for _, c := range cases {
		ep, err := r.ResolveFor(c.provider, c.kind)
		if c.ok {
			if err != nil || !ep.Admits(c.kind) {
				t.Errorf("%s/%s: %v", c.provider, c.kind, err)
			}
			continue
		}
		var ke *APIKindError
		if !errors.As(err, &ke) || !errors.Is(err, ErrAPIKindNotAdmitted) || !errors.Is(err, ErrConfig) {
			t.Errorf("%s/%s: want *APIKindError, got %v", c.provider, c.kind, err)
			continue
		}
		if ke.ProviderID != c.provider || ke.APIKind != c.kind || !strings.Contains(err.Error(), "apiKinds") || strings.Contains(err.Error(), secret) {
			t.Errorf("%s/%s: %v", c.provider, c.kind, err)
		}
		if ep.BaseURL != "" || ep.APIKey != "" {
			t.Errorf("%s/%s: a refused endpoint came back: %v", c.provider, c.kind, ep)
		}
	}
	// Resolve itself keeps its old contract: no kind, no check.
	if _, err := r.Resolve("ollama"); err != nil {
		t.Fatal(err)
	}
}

func TestOpenAIBuiltinAdmitsBothOpenAIKinds(t *testing.T) {
	r := New("", env(map[string]string{OpenAIKeyEnv: secret}))
	for _, k := range []string{core.APIChatCompletions, core.APIOpenAIResponses} {
		if _, err := r.ResolveFor("openai", k); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
}

func TestStaticIsUnrestrictedUnlessTold(t *testing.T) {
	s := Static{"any": {BaseURL: "http://a"}, "chat": {BaseURL: "http://c", APIKinds: []string{core.APIChatCompletions}}}
	if _, err := s.ResolveFor("any", core.APIAnthropicMessages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResolveFor("chat", core.APIAnthropicMessages); !errors.Is(err, ErrAPIKindNotAdmitted) {
		t.Fatalf("got %v", err)
	}
	if _, err := ResolveFor(s, "none", core.APIChatCompletions); !errors.Is(err, ErrUnknownProvider) {
		t.Fatalf("got %v", err)
	}
}

// TestCustomProviderNeverFallsBackToOpenAI: a custom record gets nothing from
// the OpenAI built-in — not its base URL, not its key, not its API kinds —
// and an unknown or refusing provider is an error, never the OpenAI endpoint.
func TestCustomProviderNeverFallsBackToOpenAI(t *testing.T) {
	vars := env(map[string]string{OpenAIKeyEnv: secret, OpenAIBaseURLEnv: "https://api.openai.com/v1"})

	p := writeConfig(t, `{"providers": {"local": {"baseUrl": "http://127.0.0.1:8000/v1"}}}`)
	ep, err := New(p, vars).Resolve("local")
	if err != nil || ep.APIKey != "" || ep.BaseURL != "http://127.0.0.1:8000/v1" {
		t.Fatalf("custom provider borrowed from openai: %v %v", ep, err)
	}

	p = writeConfig(t, `{"providers": {"nourl": {"apiKeyEnv": "OPENAI_API_KEY"}}}`)
	if _, err := New(p, vars).Resolve("nourl"); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "baseUrl is required") {
		t.Fatalf("custom provider without baseUrl: %v", err)
	}

	if _, err := New("", vars).ResolveFor("gpt", core.APIChatCompletions); !errors.Is(err, ErrUnknownProvider) {
		t.Fatalf("unknown provider: %v", err)
	}

	p = writeConfig(t, `{"providers": {"vllm": {"baseUrl": "http://localhost:8000/v1"}}}`)
	if _, err := New(p, vars).ResolveFor("vllm", core.APIOpenAIResponses); !errors.Is(err, ErrAPIKindNotAdmitted) {
		t.Fatalf("refusing provider: %v", err)
	}
}

func TestEndpointStringShowsKinds(t *testing.T) {
	s := Endpoint{BaseURL: "https://h", APIKey: secret, APIKinds: []string{core.APIAnthropicMessages}}.String()
	if !strings.Contains(s, "anthropic_messages") || strings.Contains(s, secret) {
		t.Fatal(s)
	}
}

// CheckUsable refuses what CheckKnown does, and a provider whose key is
// missing now; CheckKnown lets that pass.
func TestCheckUsableRefusesAMissingKey(t *testing.T) {
	r := New("", env(map[string]string{}))
	if err := CheckKnown(r, OpenAIProviderID, "chat_completions"); err != nil {
		t.Fatalf("CheckKnown: %v", err)
	}
	var missing *MissingKeyError
	if err := CheckUsable(r, OpenAIProviderID, "chat_completions"); !errors.As(err, &missing) || missing.EnvVar != OpenAIKeyEnv {
		t.Fatalf("CheckUsable without a key: %v", err)
	}
	if err := CheckUsable(New("", env(map[string]string{OpenAIKeyEnv: "sk-x"})), OpenAIProviderID, "chat_completions"); err != nil {
		t.Fatalf("CheckUsable with a key: %v", err)
	}
	var unknown *UnknownProviderError
	if err := CheckUsable(r, "nobody", "chat_completions"); !errors.As(err, &unknown) {
		t.Fatalf("an unknown provider: %v", err)
	}
}
