package endpoint

import "testing"

func TestURLJoinsThePathBeforeTheQuery(t *testing.T) {
	for base, want := range map[string]string{
		"https://api.openai.com/v1":                              "https://api.openai.com/v1/chat/completions",
		"https://x/openai/deployments/d?api-version=2024-10-21":  "https://x/openai/deployments/d/chat/completions?api-version=2024-10-21",
		"https://x/openai/deployments/d/?api-version=2024-10-21": "https://x/openai/deployments/d/chat/completions?api-version=2024-10-21",
		"https://x/a%2Fb?k=v&k2=a%20b":                           "https://x/a%2Fb/chat/completions?k=v&k2=a%20b",
		"http://127.0.0.1:8080":                                  "http://127.0.0.1:8080/chat/completions",
		"https://x/v1#frag":                                      "https://x/v1/chat/completions",
	} {
		got, err := Endpoint{BaseURL: base}.URL("/chat/completions")
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", base, got, err, want)
		}
	}
	for _, bad := range []string{"", "not a url", "https://x/%zz", "/relative"} {
		if got, err := (Endpoint{BaseURL: bad}).URL("/responses"); err == nil {
			t.Errorf("%q: want an error, got %q", bad, got)
		}
	}
}
