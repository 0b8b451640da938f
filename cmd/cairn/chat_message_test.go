package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

// The message comes from the arguments, from standard input ("-") or from
// a file (--file): a prompt larger than an argument list can hold still goes.
func TestChatMessageSources(t *testing.T) {
	big := strings.Repeat("a long prompt line\n", 200_000) // 3.8 MB: "argument list too long" as an argument
	file := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(file, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	if m, stdin, err := chatMessage([]string{"hello", "there"}, "", nil); err != nil || m != "hello there" || stdin {
		t.Fatalf("arguments: %q %v %v", m, stdin, err)
	}
	if m, stdin, err := chatMessage([]string{"-"}, "", strings.NewReader(big)); err != nil || m != strings.TrimRight(big, "\n") || !stdin {
		t.Fatalf("stdin: %d bytes, %v %v", len(m), stdin, err)
	}
	if m, _, err := chatMessage(nil, file, nil); err != nil || len(m) != len(big)-1 {
		t.Fatalf("--file: %d bytes, %v", len(m), err)
	}
	for _, c := range []struct {
		args []string
		file string
		in   string
		says string
	}{
		{[]string{"x"}, file, "", "not both"},
		{nil, "", "", "no message"},
		{[]string{"-"}, "", "  \n", "no message"},
		{[]string{"-"}, "", strings.Repeat("x", maxChatMessage+1), "MiB"},
	} {
		if _, _, err := chatMessage(c.args, c.file, strings.NewReader(c.in)); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v %q: %v, want %q", c.args, c.file, err, c.says)
		}
	}
}

// A new session's flags beside --session would be ignored: chat refuses
// them, naming each, before it sends anything.
func TestChatRefusesNewSessionFlagsWithSession(t *testing.T) {
	s := startVFSServer(t)
	_, err := s.cairn(t, "chat", "--session", "s1", "--model", "gpt-5", "--tool", "vfs_read_file", "hello")
	if err == nil || !strings.Contains(err.Error(), "--model, --tool configure a new session; --session s1 continues one") {
		t.Fatalf("chat --session with --model and --tool: %v", err)
	}
}

func TestChatRefusesOneNewSessionFlagInTheSingular(t *testing.T) {
	s := startVFSServer(t)
	_, err := s.cairn(t, "chat", "--session", "s1", "--model", "gpt-5", "hello")
	if err == nil || !strings.Contains(err.Error(), "--model configures a new session") || !strings.Contains(err.Error(), "drop it") {
		t.Fatalf("chat --session with --model: %v", err)
	}
}

// Without --api, a new session speaks the API kind of its provider: the
// built-in anthropic provider speaks only anthropic_messages.
func TestChatAPIKindFollowsTheProvider(t *testing.T) {
	for _, c := range []struct{ provider, api, want string }{
		{"openai", "", core.APIChatCompletions},
		{"anthropic", "", core.APIAnthropicMessages},
		{"anthropic", core.APIChatCompletions, core.APIChatCompletions},
		{"openai", core.APIOpenAIResponses, core.APIOpenAIResponses},
		{"local", "", core.APIChatCompletions},
	} {
		if got := (chatOptions{provider: c.provider, apiKind: c.api}).sessionAPIKind(); got != c.want {
			t.Errorf("--provider %s --api %q: API kind %q, want %q", c.provider, c.api, got, c.want)
		}
	}
}
