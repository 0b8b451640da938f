package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
)

// Approvals as a user gives them: `cairn chat --approve vfs_list_dir`
// asks y/n and "y" lets the call run; in a second run nobody answers the
// prompt, chat says how to decide, and `cairn approvals decide … deny`
// gives the model the reason instead of the call's output.
func TestE2E_ApprovalsInChatAndFromTheCLI(t *testing.T) {
	call := func(id string) string {
		return `{"id":"chatcmpl-a","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` +
			`{"id":"` + id + `","type":"function","function":{"name":"vfs_list_dir","arguments":"{\"path\":\"/\"}"}}]},"finish_reason":"tool_calls"}],` +
			`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`
	}
	fake := newScriptedFake(t, "/v1/chat/completions", "Authorization", "Bearer "+fakeKey,
		call("call_1"), textResponse("chatcmpl-b", "Listed."), call("call_2"), textResponse("chatcmpl-c", "I will not list them."))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "providers.json")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`{"providers":{"fake":{"baseUrl":%q,"apiKeyEnv":"FAKE_CHAT_KEY"}}}`, fake.srv.URL+"/v1")), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, filepath.Join(dir, "data"), cfg, fakeKey)

	chat := exec.Command(cairnBin, "chat", "--addr", srv.addr, "--provider", "fake", "--model", "m",
		"--tool", "vfs_list_dir", "--approve", "vfs_list_dir", "What files are there?")
	chat.Stdin = strings.NewReader("y\n")
	out, err := chat.CombinedOutput()
	text := string(out)
	if err != nil || !strings.Contains(text, `approval needed: vfs_list_dir {"path":"/"}`) || !strings.Contains(text, "approved vfs_list_dir") || !strings.Contains(text, "run completed") {
		t.Fatalf("cairn chat: %v\n%s", err, text)
	}
	session := regexp.MustCompile(`session (\S+)`).FindStringSubmatch(text)[1]
	if reqs := fake.requests(); len(reqs) != 2 || !strings.Contains(string(reqs[1]), `"tool_call_id":"call_1","content":"this session links no files`) {
		t.Fatalf("the approved call did not run: %s", reqs[len(reqs)-1])
	}

	// Nobody answers: chat follows on, and the CLI decides.
	follow := startProc(t, "chat", cairnBin, []string{"chat", "--addr", srv.addr, "--session", session, "And now?"}, nil, "  decide with: cairn approvals decide ")
	pending, err := runCairn(t, nil, "approvals", "pending", "--addr", srv.addr, session)
	var c api.PendingCall
	if err != nil || json.Unmarshal([]byte(pending), &c) != nil || c.CallID != "call_2" || c.Name != "vfs_list_dir" {
		t.Fatalf("cairn approvals pending: %v\n%s", err, pending)
	}
	if out, err := runCairn(t, nil, "approvals", "decide", "--addr", srv.addr, session, "call_2", "deny", "--reason", "not now"); err != nil {
		t.Fatalf("cairn approvals decide: %v\n%s", err, out)
	}
	follow.waitLine(t, 0, "run completed", 30*time.Second)
	if reqs := fake.requests(); len(reqs) != 4 || !strings.Contains(string(reqs[3]), `"tool_call_id":"call_2","content":"The user denied this tool call: not now"`) {
		t.Fatalf("the model did not get the denial: %s", reqs[len(reqs)-1])
	}
}
