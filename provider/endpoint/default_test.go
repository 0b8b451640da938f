package endpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const secret = "sk-test-SECRET-value-0123456789"

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "endpoints.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOpenAIBuiltinReadsEnv(t *testing.T) {
	r := New("", env(map[string]string{OpenAIKeyEnv: secret}))
	ep, err := r.Resolve("openai")
	if err != nil {
		t.Fatal(err)
	}
	if ep.BaseURL != OpenAIBaseURL || ep.APIKey != secret || ep.ReasoningField != "" {
		t.Fatalf("got %+v", ep)
	}
}

func TestOpenAIBaseURLFromEnvTrimsSlash(t *testing.T) {
	r := New("", env(map[string]string{OpenAIBaseURLEnv: "http://localhost:11434/v1/"}))
	ep, err := r.Resolve("openai")
	if err != nil {
		t.Fatalf("custom base URL must not need a key: %v", err)
	}
	if ep.BaseURL != "http://localhost:11434/v1" || ep.APIKey != "" {
		t.Fatalf("got %+v", ep)
	}
}

func TestOpenAIPublicURLWithoutKeyNamesEnvVar(t *testing.T) {
	_, err := New("", env(nil)).Resolve("openai")
	var mk *MissingKeyError
	if !errors.As(err, &mk) || !errors.Is(err, ErrMissingKey) {
		t.Fatalf("want *MissingKeyError, got %v", err)
	}
	if !strings.Contains(err.Error(), OpenAIKeyEnv) {
		t.Fatalf("error should name %s: %v", OpenAIKeyEnv, err)
	}
}

func TestUnknownProvider(t *testing.T) {
	for _, id := range []string{"nope", ""} {
		_, err := New("", env(map[string]string{OpenAIKeyEnv: secret})).Resolve(id)
		var up *UnknownProviderError
		if !errors.As(err, &up) || up.ProviderID != id || !errors.Is(err, ErrUnknownProvider) {
			t.Fatalf("%q: want *UnknownProviderError, got %v", id, err)
		}
	}
}

func TestConfigAddsProviders(t *testing.T) {
	p := writeConfig(t, `{"providers": {
		"deepseek": {"baseUrl": "https://api.deepseek.com/v1", "apiKeyEnv": "DEEPSEEK_API_KEY", "reasoningField": "reasoning_content",
		             "headers": {"X-Trace": "on"}},
		"ollama":   {"baseUrl": "http://localhost:11434/v1"},
		"literal":  {"baseUrl": "https://example.test/v1", "apiKey": "lit-key", "stream": false}
	}}`)
	r := New(p, env(map[string]string{"DEEPSEEK_API_KEY": secret}))

	ep, err := r.Resolve("deepseek")
	if err != nil {
		t.Fatal(err)
	}
	if ep.BaseURL != "https://api.deepseek.com/v1" || ep.APIKey != secret || ep.ReasoningField != ReasoningContent || ep.Headers["X-Trace"] != "on" {
		t.Fatalf("deepseek: %+v", ep)
	}
	ep, err = r.Resolve("ollama")
	if err != nil || ep.APIKey != "" || ep.BaseURL != "http://localhost:11434/v1" || !ep.Stream {
		t.Fatalf("ollama: %+v %v", ep, err)
	}
	ep, err = r.Resolve("literal") // a server without streaming says so
	if err != nil || ep.APIKey != "lit-key" || ep.Stream {
		t.Fatalf("literal: %+v %v", ep, err)
	}
}

func TestConfigOverridesOpenAIFieldByField(t *testing.T) {
	p := writeConfig(t, `{"providers": {"openai": {"headers": {"OpenAI-Organization": "org-1"}}}}`)
	ep, err := New(p, env(map[string]string{OpenAIKeyEnv: secret})).Resolve("openai")
	if err != nil {
		t.Fatal(err)
	}
	if ep.BaseURL != OpenAIBaseURL || ep.APIKey != secret || ep.Headers["OpenAI-Organization"] != "org-1" || !ep.Stream {
		t.Fatalf("got %+v (a built-in provider streams)", ep)
	}

	p = writeConfig(t, `{"providers": {"openai": {"baseUrl": "http://127.0.0.1:8080/v1", "apiKeyEnv": "MY_KEY"}}}`)
	ep, err = New(p, env(map[string]string{OpenAIKeyEnv: "ignored", "MY_KEY": secret, OpenAIBaseURLEnv: "http://elsewhere/v1"})).Resolve("openai")
	if err != nil {
		t.Fatal(err)
	}
	if ep.BaseURL != "http://127.0.0.1:8080/v1" || ep.APIKey != secret {
		t.Fatalf("config must win over the built-in: %+v", ep)
	}
}

func TestDeclaredKeyEnvMustBeSet(t *testing.T) {
	p := writeConfig(t, `{"providers": {"groq": {"baseUrl": "https://api.groq.com/openai/v1", "apiKeyEnv": "GROQ_API_KEY"}}}`)
	_, err := New(p, env(nil)).Resolve("groq")
	var mk *MissingKeyError
	if !errors.As(err, &mk) || mk.EnvVar != "GROQ_API_KEY" || !strings.Contains(err.Error(), "GROQ_API_KEY") {
		t.Fatalf("want missing GROQ_API_KEY, got %v", err)
	}
}

// The README's Ollama record names an apiKeyEnv; on a loopback server the
// variable may be unset: the endpoint then has no key.
func TestDeclaredKeyEnvIsOptionalOnLoopback(t *testing.T) {
	p := writeConfig(t, `{"providers": {"local": {"baseUrl": "http://127.0.0.1:11434/v1", "apiKeyEnv": "LOCAL_KEY"}}}`)
	ep, err := New(p, env(nil)).Resolve("local")
	if err != nil || ep.APIKey != "" {
		t.Fatalf("loopback without LOCAL_KEY: %+v, %v", ep, err)
	}
	ep, err = New(p, env(map[string]string{"LOCAL_KEY": "k"})).Resolve("local")
	if err != nil || ep.APIKey != "k" {
		t.Fatalf("loopback with LOCAL_KEY: %+v, %v", ep, err)
	}
}

func TestCustomProviderOnPublicOpenAIHostNeedsKey(t *testing.T) {
	p := writeConfig(t, `{"providers": {"oa2": {"baseUrl": "https://api.openai.com/v1"}}}`)
	_, err := New(p, env(nil)).Resolve("oa2")
	if !errors.Is(err, ErrMissingKey) || !strings.Contains(err.Error(), "apiKeyEnv") {
		t.Fatalf("got %v", err)
	}
}

func TestResolveRereadsKeysAndFile(t *testing.T) {
	vars := map[string]string{OpenAIKeyEnv: "key-one"}
	p := writeConfig(t, `{"providers": {}}`)
	r := New(p, func(k string) string { return vars[k] })
	ep, _ := r.Resolve("openai")
	if ep.APIKey != "key-one" {
		t.Fatal(ep)
	}
	vars[OpenAIKeyEnv] = "key-two"
	if err := os.WriteFile(p, []byte(`{"providers": {"local": {"baseUrl": "http://localhost:1/v1"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ep, _ = r.Resolve("openai")
	if ep.APIKey != "key-two" {
		t.Fatalf("rotated key not picked up: %v", ep)
	}
	if _, err := r.Resolve("local"); err != nil {
		t.Fatalf("rewritten config not picked up: %v", err)
	}
	// An edit of the same size is seen by its modification time.
	if err := os.WriteFile(p, []byte(`{"providers": {"other": {"baseUrl": "http://localhost:1/v1"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Second)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Resolve("other"); err != nil {
		t.Fatalf("a same-size edit not picked up: %v", err)
	}
	if _, err := r.Resolve("local"); err == nil {
		t.Fatal("the provider the edit removed still resolves")
	}
}

func TestConfigErrorsAreTypedAndNeverQuoteSecrets(t *testing.T) {
	cases := map[string]string{
		"syntax":            `{"providers": {"x": {"baseUrl": "https://h/v1", "apiKey": "` + secret + `",}}}`,
		"unknown field":     `{"providers": {"x": {"baseUrl": "https://h/v1", "api_key": "` + secret + `"}}}`,
		"bad url":           `{"providers": {"x": {"baseUrl": "ftp://user:` + secret + `@h/v1"}}}`,
		"no url":            `{"providers": {"x": {"apiKey": "` + secret + `"}}}`,
		"bad reasoning":     `{"providers": {"x": {"baseUrl": "https://h/v1", "reasoningField": "thoughts"}}}`,
		"empty key env":     `{"providers": {"x": {"baseUrl": "https://h/v1", "apiKeyEnv": ""}}}`,
		"wrong type":        `{"providers": {"x": {"baseUrl": "https://h/v1", "apiKey": 12345}}}`,
		"trailing":          `{"providers": {}} {}`,
		"empty apiKinds":    `{"providers": {"x": {"baseUrl": "https://h/v1", "apiKey": "` + secret + `", "apiKinds": []}}}`,
		"unknown apiKind":   `{"providers": {"x": {"baseUrl": "https://h/v1", "apiKey": "` + secret + `", "apiKinds": ["completions"]}}}`,
		"apiKinds type":     `{"providers": {"x": {"baseUrl": "https://h/v1", "apiKinds": "chat_completions"}}}`,
		"auth header":       `{"providers": {"x": {"baseUrl": "https://h/v1", "headers": {"Authorization": "Bearer ` + secret + `"}}}}`,
		"x-api-key header":  `{"providers": {"x": {"baseUrl": "https://h/v1", "headers": {"x-api-key": "` + secret + `"}}}}`,
		"api-key header":    `{"providers": {"x": {"baseUrl": "https://h/v1", "headers": {"API-KEY": "` + secret + `"}}}}`,
		"header line break": `{"providers": {"x": {"baseUrl": "https://h/v1", "headers": {"X-Note": "a\r\nX-Evil: ` + secret + `"}}}}`,
		"header name":       `{"providers": {"x": {"baseUrl": "https://h/v1", "headers": {"` + secret + `: x": "v"}}}}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := New(writeConfig(t, body), env(map[string]string{OpenAIKeyEnv: secret})).Resolve("x")
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrConfig) {
				t.Fatalf("want *ConfigError, got %v", err)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("error leaks secret: %v", err)
			}
		})
	}
}

func TestMissingConfigFile(t *testing.T) {
	_, err := New(filepath.Join(t.TempDir(), "absent.json"), env(nil)).Resolve("openai")
	if !errors.Is(err, ErrConfig) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %v", err)
	}
}

func TestEndpointFormattingRedactsSecrets(t *testing.T) {
	ep := Endpoint{BaseURL: "https://h/v1", APIKey: secret, Headers: map[string]string{"api-key": secret}}
	for _, s := range []string{fmt.Sprint(ep), fmt.Sprintf("%v", ep), fmt.Sprintf("%+v", ep), fmt.Sprintf("%#v", ep), fmt.Sprint(&ep)} {
		if strings.Contains(s, secret) {
			t.Fatalf("formatting leaks secret: %s", s)
		}
		if !strings.Contains(s, "api-key") {
			t.Fatalf("header names should be shown: %s", s)
		}
	}
}

func TestStatic(t *testing.T) {
	s := Static{"a": {BaseURL: "http://a"}}
	if ep, err := s.Resolve("a"); err != nil || ep.BaseURL != "http://a" {
		t.Fatal(ep, err)
	}
	if _, err := s.Resolve("b"); !errors.Is(err, ErrUnknownProvider) {
		t.Fatal(err)
	}
}
