package endpoint

import (
	"errors"
	"strings"
	"testing"
)

func TestPlainHTTPOnlyOnLoopback(t *testing.T) {
	allowed := []string{
		"http://localhost:11434/v1", "http://LOCALHOST/v1", "http://127.0.0.1:8080/v1", "http://127.4.5.6/v1",
		"http://[::1]:8080/v1", "https://example.com/v1", "https://10.0.0.1/v1",
	}
	for _, u := range allowed {
		p := writeConfig(t, `{"providers": {"x": {"baseUrl": "`+u+`"}}}`)
		if _, err := New(p, env(nil)).Resolve("x"); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	refused := map[string]string{
		"http://example.com/v1":                    "example.com",
		"http://10.0.0.1:8000/v1":                  "10.0.0.1",
		"http://localhost.example.com/v1":          "localhost.example.com",
		"http://0.0.0.0:8000/v1":                   "0.0.0.0",
		"http://[::2]/v1":                          "::2",
		"http://user:" + secret + "@remote.test/v": "remote.test",
		"http://remote.test/v1?key=" + secret:      "remote.test",
	}
	for u, host := range refused {
		p := writeConfig(t, `{"providers": {"x": {"baseUrl": "`+u+`"}}}`)
		_, err := New(p, env(nil)).Resolve("x")
		var ie *InsecureBaseURLError
		if !errors.As(err, &ie) || !errors.Is(err, ErrInsecureBaseURL) || !errors.Is(err, ErrConfig) {
			t.Errorf("%s: want *InsecureBaseURLError, got %v", u, err)
			continue
		}
		if ie.Host != host || ie.ProviderID != "x" || !strings.Contains(ie.Source, p) {
			t.Errorf("%s: %+v", u, ie)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: error leaks the secret: %v", u, err)
		}
	}
}

func TestPlainHTTPFromEnvironmentIsRefusedToo(t *testing.T) {
	for _, c := range []struct{ id, envVar string }{{OpenAIProviderID, OpenAIBaseURLEnv}, {AnthropicProviderID, AnthropicBaseURLEnv}} {
		_, err := New("", env(map[string]string{c.envVar: "http://gateway.internal/v1"})).Resolve(c.id)
		var ie *InsecureBaseURLError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.envVar) || ie.Host != "gateway.internal" {
			t.Fatalf("%s: %v", c.id, err)
		}
	}
}

func TestNonSecretHeadersAreKept(t *testing.T) {
	p := writeConfig(t, `{"providers": {"x": {"baseUrl": "https://h/v1", "headers": {"OpenAI-Organization": "org-1", "anthropic-beta": "a,b", "X-Title": "Cairn"}}}}`)
	ep, err := New(p, env(nil)).Resolve("x")
	if err != nil {
		t.Fatal(err)
	}
	if len(ep.Headers) != 3 || ep.Headers["X-Title"] != "Cairn" {
		t.Fatalf("got %v", ep)
	}
}

func TestRedact(t *testing.T) {
	ep := Endpoint{APIKey: secret, Headers: map[string]string{"X-Short": "on", "X-Long": "long-header-value"}}
	got := ep.Redact("key " + secret + " header long-header-value turned on")
	if got != "key [redacted] header [redacted] turned on" {
		t.Fatalf("got %q", got)
	}
	if (Endpoint{}).Redact("plain") != "plain" {
		t.Fatal("no secrets, no change")
	}
}
