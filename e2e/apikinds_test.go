package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const responsesBody = `{"id":"resp_e2e","object":"response","status":"completed","model":"m","output":[{"type":"message","id":"msg_e2e","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello from Responses","annotations":[]}]}],"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}}`

const anthropicBody = `{"id":"msg_e2e","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hello from Anthropic"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`

// Sessions of the two provider-native API kinds run end to end through
// `cairn serve` and `cairn chat`, and the next request replays the stored
// native output byte for byte.
func TestE2E_ResponsesAndAnthropicSessionsThroughServeAndChat(t *testing.T) {
	resp := newScriptedFake(t, "/v1/responses", "Authorization", "Bearer "+fakeKey, responsesBody)
	anth := newScriptedFake(t, "/v1/messages", "X-Api-Key", fakeKey, anthropicBody)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "providers.json")
	records := fmt.Sprintf(`{"providers":{
		"fake-responses":{"baseUrl":%q,"apiKeyEnv":"FAKE_CHAT_KEY","apiKinds":["openai_responses"]},
		"fake-anthropic":{"baseUrl":%q,"apiKeyEnv":"FAKE_CHAT_KEY","apiKinds":["anthropic_messages"]}}}`, resp.srv.URL+"/v1", anth.srv.URL)
	if err := os.WriteFile(cfg, []byte(records), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, filepath.Join(dir, "data"), cfg, fakeKey)

	cases := []struct {
		provider, apiKind, want string
		fake                    *scriptedFake
		native                  string // the stored output as it must come back
	}{
		{"fake-responses", "openai_responses", "Hello from Responses", resp,
			`{"type":"message","id":"msg_e2e","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello from Responses","annotations":[]}]}`},
		{"fake-anthropic", "anthropic_messages", "Hello from Anthropic", anth, `{"type":"text","text":"Hello from Anthropic"`},
	}
	for _, tc := range cases {
		out, err := runCairn(t, nil, "chat", "--addr", srv.addr, "--provider", tc.provider, "--api", tc.apiKind, "--model", "m", "Draft release notes for Acorn 2.0")
		if err != nil || !strings.Contains(out, tc.want) {
			t.Fatalf("%s: chat: %v\n%s", tc.apiKind, err, out)
		}
		session := regexp.MustCompile(`session (\S+)`).FindStringSubmatch(out)
		if session == nil {
			t.Fatalf("%s: no session id in %q", tc.apiKind, out)
		}
		if out, err := runCairn(t, nil, "chat", "--addr", srv.addr, "--session", session[1], "Shorter, please"); err != nil || !strings.Contains(out, tc.want) {
			t.Fatalf("%s: second chat: %v\n%s", tc.apiKind, err, out)
		}
		reqs := tc.fake.requests()
		if len(reqs) != 2 {
			t.Fatalf("%s: %d requests, want 2", tc.apiKind, len(reqs))
		}
		if !bytes.Contains(reqs[1], []byte(tc.native)) {
			t.Fatalf("%s: the second request does not replay the stored output:\n%s", tc.apiKind, reqs[1])
		}
	}
}
