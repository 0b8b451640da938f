package web

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/runtime"
)

// The sessions list shows each session's title (the start of its first
// message), marks history forks and sub-agents' sessions with links to
// where they come from, and searches by id or title.
func TestSessionsListShowsTitlesMarksAndSearch(t *testing.T) {
	t.Parallel()
	in := newInstance(t, instanceOptions{})
	ctx := context.Background()
	teamWithReviewer(t, in)
	var mu sync.Mutex
	asked := false
	in.chat.setReply(func(user string) string {
		mu.Lock()
		defer mu.Unlock()
		if user == "Get the granite report reviewed" && !asked {
			asked = true
			return callPrefix + `agent_run|{"agent":"reviewer","input":"Review the granite report"}`
		}
		return "Done."
	})
	long := "What is a cairn, and why do walkers on the high fells of the Lake District add a stone to one as they pass?"
	in.createSession(t, "alpha", "")
	in.runToEnd(t, "alpha", long)
	if _, err := in.client.ForkSession(ctx, api.SessionForkParams{SessionID: "alpha", NewSessionID: "alpha-fork"}); err != nil {
		t.Fatal(err)
	}
	if _, err := in.client.CreateSession(ctx, api.CreateSessionParams{SessionID: "beta", Model: fakeModel, Tools: []string{runtime.AgentRunTool},
		Links: []api.LinkParam{{Mount: "/work", Workspace: "team"}}}); err != nil {
		t.Fatal(err)
	}
	in.runToEnd(t, "beta", "Get the granite report reviewed")
	list, err := in.client.ListSessions(ctx, api.SessionListParams{})
	if err != nil {
		t.Fatal(err)
	}
	child := ""
	for _, l := range list.Sessions {
		if l.Parent != nil && l.Parent.SessionID == "beta" {
			child = l.SessionID
		}
	}
	if child == "" {
		t.Fatalf("beta's run made no sub-agent session: %+v", list.Sessions)
	}
	in.createSession(t, "empty", "")

	tb := newTab(t)
	tb.open(in.url + "/")
	tb.wait(`document.querySelectorAll('#sessions tbody tr[data-session]').length === 5`)
	title := func(id string) string {
		return eval[string](tb, `document.querySelector('tr[data-session="`+id+`"] .session-title').textContent`)
	}
	if got := title("alpha"); !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) || !strings.HasSuffix(got, "…") || len([]rune(got)) != 80 {
		t.Errorf("alpha's title is %q: want the first message cut at 80 characters", got)
	}
	if got := title("alpha-fork"); got != title("alpha") {
		t.Errorf("the fork's title is %q, want its source's", got)
	}
	if got := title("empty"); got != "no message yet" {
		t.Errorf("a session without runs is titled %q", got)
	}
	if got := eval[string](tb, `document.querySelector('tr[data-session="alpha-fork"] .mark-fork a').getAttribute('href')`); got != "/sessions/alpha" {
		t.Errorf("the fork mark links %q", got)
	}
	if got := eval[string](tb, `document.querySelector('tr[data-session="`+child+`"] .mark-child a').getAttribute('href')`); got != "/sessions/beta" {
		t.Errorf("the sub-agent mark links %q", got)
	}
	if n := eval[int](tb, `document.querySelectorAll('tr[data-session="alpha"] .mark, tr[data-session="beta"] .mark').length`); n != 0 {
		t.Errorf("sessions made from scratch carry %d marks", n)
	}
	tb.shot("sessions-marks")

	search := func(q string, want ...string) {
		t.Helper()
		tb.do(setValue(`#session-search`, q))
		tb.click(`.session-search button`)
		tb.wait(fmt.Sprintf(`new URLSearchParams(location.search).get('q') === %q && !document.querySelector('.status-line').textContent`, q))
		got := eval[[]string](tb, `[...document.querySelectorAll('#sessions tbody tr[data-session]')].map(tr => tr.dataset.session)`)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("searching %q lists %q, want %q", q, got, want)
		}
	}
	search("GRANITE", child, "beta") // the title, in any case: the child's first message names it too
	search("alpha", "alpha-fork", "alpha")
	search("nothing like this")
	if got := eval[string](tb, `document.querySelector('#sessions td.empty').textContent`); !strings.Contains(got, "nothing like this") {
		t.Errorf("an empty search says %q", got)
	}
	tb.shot("sessions-search")
}
