package endpoint

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

func TestAnthropicBuiltinReadsEnv(t *testing.T) {
	ep, err := New("", env(map[string]string{AnthropicKeyEnv: secret})).Resolve(AnthropicProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if ep.BaseURL != AnthropicBaseURL || ep.APIKey != secret || len(ep.APIKinds) != 1 || ep.APIKinds[0] != core.APIAnthropicMessages {
		t.Fatalf("got %v", ep)
	}
}

func TestAnthropicBaseURLFromEnv(t *testing.T) {
	ep, err := New("", env(map[string]string{AnthropicBaseURLEnv: "https://proxy.example/anthropic/"})).Resolve("anthropic")
	if err != nil {
		t.Fatalf("a proxy base URL must not need a key: %v", err)
	}
	if ep.BaseURL != "https://proxy.example/anthropic" || ep.APIKey != "" {
		t.Fatalf("got %v", ep)
	}
}

func TestAnthropicPublicURLWithoutKeyNamesEnvVar(t *testing.T) {
	// OPENAI_API_KEY is no substitute: each built-in reads its own variable.
	_, err := New("", env(map[string]string{OpenAIKeyEnv: secret})).Resolve("anthropic")
	var mk *MissingKeyError
	if !errors.As(err, &mk) || mk.EnvVar != AnthropicKeyEnv || !strings.Contains(err.Error(), AnthropicKeyEnv) {
		t.Fatalf("want missing %s, got %v", AnthropicKeyEnv, err)
	}
	// Any record pointing at the public Anthropic API needs a key too.
	p := writeConfig(t, `{"providers": {"claude": {"baseUrl": "https://API.anthropic.com", "apiKinds": ["anthropic_messages"]}}}`)
	if _, err := New(p, env(nil)).Resolve("claude"); !errors.Is(err, ErrMissingKey) {
		t.Fatalf("custom record on api.anthropic.com: %v", err)
	}
}

func TestConfigOverridesAnthropicFieldByField(t *testing.T) {
	p := writeConfig(t, `{"providers": {"anthropic": {"headers": {"anthropic-beta": "prompt-caching-2024-07-31"}}}}`)
	ep, err := New(p, env(map[string]string{AnthropicKeyEnv: secret})).Resolve("anthropic")
	if err != nil {
		t.Fatal(err)
	}
	if ep.BaseURL != AnthropicBaseURL || ep.APIKey != secret || ep.Headers["anthropic-beta"] != "prompt-caching-2024-07-31" || !ep.Admits(core.APIAnthropicMessages) {
		t.Fatalf("got %v", ep)
	}
}
