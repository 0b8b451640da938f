package endpoint

import (
	"strings"
	"testing"
)

// leaks reports whether text holds the key in a form that gives it away: a
// start of it at least MinKeyPrefix long (or all of it), in any letter case.
func leaks(text, key string) bool {
	lt, lk := strings.ToLower(text), strings.ToLower(key)
	return strings.Contains(lt, lk[:min(len(lk), MinKeyPrefix)])
}

func TestRedactCoversEveryEchoedFormOfTheKey(t *testing.T) {
	const key = "sk-proj-AbCdEf0123456789XyZ"
	ep := Endpoint{APIKey: key}
	for name, echo := range map[string]string{
		"exact":              key,
		"lower-cased":        strings.ToLower(key),
		"upper-cased":        strings.ToUpper(key),
		"first 12":           key[:12],
		"first 12, lower":    strings.ToLower(key[:12]),
		"first 20, upper":    strings.ToUpper(key[:20]),
		"masked tail":        key[:14] + "*****************9XyZ",
		"twice":              key + " and " + strings.ToLower(key[:15]),
		"beside invalid UTF": "\xff" + key[:13] + "\xfe",
	} {
		msg := "Incorrect API key provided: " + echo + "."
		got := ep.Redact(msg)
		if leaks(got, key) || !strings.Contains(got, "[redacted]") || !strings.HasPrefix(got, "Incorrect API key provided: ") {
			t.Errorf("%s: %q → %q", name, msg, got)
		}
		if body := ep.RedactBody([]byte(msg)); leaks(string(body), key) {
			t.Errorf("%s: body %q → %q", name, msg, body)
		}
	}
	// Eleven characters are not the key: they are left alone, as is prose.
	short := "prefix " + key[:MinKeyPrefix-1] + " suffix"
	if got := ep.Redact(short); got != short {
		t.Errorf("%q → %q", short, got)
	}
	// The longest match goes: nothing of the key's tail is left behind.
	if got := ep.Redact("k=" + strings.ToLower(key) + "!"); got != "k=[redacted]!" {
		t.Errorf("got %q", got)
	}
}

func TestRedactShortSecretsOnlyWhole(t *testing.T) {
	ep := Endpoint{APIKey: "local-key-9"}
	if got := ep.Redact("bad key LOCAL-KEY-9, local-key"); got != "bad key [redacted], local-key" {
		t.Fatalf("got %q", got)
	}
}

// A body keeps its bytes unless the key is in it, and placeholder keys of
// local servers ("ollama") are not mistaken for secrets in model output.
func TestRedactBody(t *testing.T) {
	body := []byte(`{"content":"Ollama runs models; key sk-proj-abcdefghijklmnop"}`)
	if got := (Endpoint{APIKey: "ollama"}).RedactBody(body); string(got) != string(body) {
		t.Fatalf("placeholder key mangled the body: %s", got)
	}
	got := (Endpoint{APIKey: "sk-proj-ABCDEFGHIJKLMNOPQRS"}).RedactBody(body)
	if string(got) != `{"content":"Ollama runs models; key [redacted]"}` {
		t.Fatalf("got %s", got)
	}
}

// A key's vendor prefix is every key's: an answer that quotes it is not a
// leak, and stays as the model wrote it. Four characters past it are.
func TestRedactLeavesTheVendorPrefixAlone(t *testing.T) {
	const key = "sk-ant-api03-Zx9Q0123456789abcdefAbCdEf"
	for _, text := range []string{"Anthropic keys start with sk-ant-api03-", "SK-ANT-API03 is the prefix", "sk-ant-api03-Zx9"} {
		if got := RedactSecret(text, key); got != text {
			t.Errorf("%q → %q", text, got)
		}
	}
	for _, text := range []string{"sk-ant-api03-Zx9Q", "SK-ANT-API03-ZX9Q0123", key} {
		if got := RedactSecret("key "+text+"!", key); got != "key [redacted]!" {
			t.Errorf("%q → %q", text, got)
		}
	}
}
