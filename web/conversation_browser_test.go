package web

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/api"
)

// The transcript reads as a conversation by default: each message once, a
// tool call with its result folded under it, no bookkeeping rows; "All
// events" shows every event. The header shows the session's tools, links
// and instructions.
func TestTranscriptReadsAsAConversation(t *testing.T) {
	t.Parallel()
	in := newInstance(t, instanceOptions{})
	ctx := context.Background()
	if _, err := in.client.CreateWorkspace(ctx, api.WorkspaceCreateParams{Workspace: "team"}); err != nil {
		t.Fatal(err)
	}
	if _, err := in.client.WriteFile(ctx, api.FileWriteParams{Workspace: "team", Path: "notes.md", Data: []byte("buy acorns\n")}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls := 0
	in.chat.setReply(func(user string) string {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls == 1 {
			return callPrefix + `vfs_read_file|{"path":"/work/notes.md"}`
		}
		return "The notes say: buy acorns."
	})
	if _, err := in.client.CreateSession(ctx, api.CreateSessionParams{SessionID: "conv", Model: fakeModel, Instructions: "Be brief and kind.",
		Tools: []string{"vfs_read_file"}, Links: []api.LinkParam{{Mount: "/work", Workspace: "team"}}}); err != nil {
		t.Fatal(err)
	}
	in.runToEnd(t, "conv", "Read the notes")

	tb := newTab(t)
	tb.open(in.url + "/sessions/conv")
	tb.wait(`document.querySelector('#events[data-ready="1"]') && !!document.querySelector('.folded-result')`)
	visible := func(sel string) int {
		return eval[int](tb, `[...document.querySelectorAll(`+"`"+sel+"`"+`)].filter(e => e.checkVisibility()).length`)
	}
	if n := visible(`#events .content[data-role="user"]`); n != 1 {
		t.Errorf("the conversation shows the user's message %d times", n)
	}
	if n := visible(`#events .content[data-role="assistant"]`); n != 1 {
		t.Errorf("the conversation shows %d assistant messages, want the answer once", n)
	}
	if n := visible(`#events .content[data-role="run input"], #events .content[data-role="output"], #events li.ev-quiet`); n != 0 {
		t.Errorf("the conversation shows %d run input, output or bookkeeping blocks", n)
	}
	if n := visible(`#events .content[data-entry-kind="tool_result"]`); n != 0 {
		t.Errorf("%d tool results show on their own beside the folded one", n)
	}
	tb.click(`.folded-result > summary`)
	if got := eval[string](tb, `document.querySelector('#events .content[data-entry-kind="tool_call"] .folded-result').innerText`); !strings.Contains(got, "buy acorns") {
		t.Errorf("the call's folded result reads %q", got)
	}
	chip := func(name string) string {
		return eval[string](tb, `document.querySelector('[data-chip="`+name+`"]')?.textContent || ''`)
	}
	tb.wait(`!!document.querySelector('[data-chip="instructions"]')`)
	if got := chip("tools"); !strings.Contains(got, "vfs_read_file") {
		t.Errorf("the tools chip reads %q", got)
	}
	if got := chip("links"); !strings.Contains(got, "/work") || !strings.Contains(got, "team") {
		t.Errorf("the links chip reads %q", got)
	}
	if got := chip("instructions"); !strings.Contains(got, "Be brief and kind.") {
		t.Errorf("the instructions chip reads %q", got)
	}
	tb.shot("conversation")

	tb.click(`#all-events`)
	tb.wait(`location.search === '?events=all'`)
	if n := visible(`#events li.ev-quiet`); n == 0 {
		t.Error("all events shows no bookkeeping rows")
	}
	if n := visible(`#events .content[data-entry-kind="tool_result"]`); n != 1 {
		t.Errorf("all events shows %d tool result entries, want 1", n)
	}
	if n := visible(`.folded-result`); n != 0 {
		t.Errorf("all events also shows %d folded results", n)
	}
	tb.shot("all-events")
}
