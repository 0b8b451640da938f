package web

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store/sqlite"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

type sessionRow struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Model  string `json:"model"`
	Size   string `json:"size"`
}

const readSessionRows = `[...document.querySelectorAll('#sessions tbody tr[data-session]')].map(tr => ({
	id: tr.dataset.session, status: tr.cells[1].textContent, model: tr.cells[2].textContent, size: tr.cells[4].querySelector('.events-count').textContent}))`

func TestSessionsListAndSession(t *testing.T) {
	t.Parallel()
	base := time.Now().Add(-48 * time.Hour)
	in := newInstance(t, instanceOptions{seed: func(ctx context.Context, st *sqlite.Store) {
		for i := range 27 {
			seedSession(ctx, t, st, fmt.Sprintf("archive-%02d", i), 3+i, base.Add(time.Duration(i)*time.Minute))
		}
	}})
	in.createSession(t, "alpha", "Answer in one sentence.")
	in.runToEnd(t, "alpha", "What is a cairn?")
	in.createSession(t, "beta", "")
	in.createSession(t, "gamma", "")
	want, err := in.client.ListSessions(context.Background(), api.SessionListParams{Limit: 25})
	if err != nil {
		t.Fatal(err)
	}

	tb := newTab(t)
	tb.open(in.url + "/")
	tb.wait(`document.querySelectorAll('#sessions tbody tr[data-session]').length === 25`)
	rows := eval[[]sessionRow](tb, readSessionRows)
	for i, s := range want.Sessions {
		r := rows[i]
		if r.ID != s.SessionID || !strings.Contains(r.Status, s.Status) || !strings.Contains(r.Model, s.Model.Model) ||
			r.Size != eventCount(s.Head) {
			t.Errorf("row %d = %+v, want session %s (%s, %s, %d events)", i, r, s.SessionID, s.Status, s.Model.Model, s.Head)
		}
	}
	tb.shot("sessions")

	// The next page holds the five oldest sessions.
	tb.click(`a[rel="next"]`)
	tb.wait(`location.search.startsWith('?before=') && document.querySelectorAll('#sessions tbody tr[data-session]').length === 5`)
	if first := eval[string](tb, `document.querySelector('#sessions tbody tr').dataset.session`); first != "archive-04" {
		t.Errorf("the second page starts with %s, want archive-04", first)
	}
	tb.do(chromedp.NavigateBack())
	tb.wait(`document.querySelectorAll('#sessions tbody tr[data-session]').length === 25`)

	tb.click(`tr[data-session="alpha"] a`)
	tb.wait(`location.pathname === '/sessions/alpha' && document.querySelector('#events[data-ready="1"]')`)
	// A conversation: each message once, no bookkeeping.
	text := eval[string](tb, `document.getElementById('events').innerText`)
	for _, s := range []string{"Answer in one sentence.", "What is a cairn?", "Noted: What is a cairn?"} {
		if n := strings.Count(text, s); n != 1 && !(s == "What is a cairn?" && n == 2) { // the answer quotes the question
			t.Errorf("the conversation shows %q %d times, want once", s, n)
		}
	}
	for _, s := range []string{"run.completed", "turn.planned", "run input", "output"} {
		if strings.Contains(text, s) {
			t.Errorf("the conversation shows %q", s)
		}
	}
	// All events: the bookkeeping too.
	tb.click(`#all-events`)
	tb.wait(`location.search === '?events=all'`)
	text = eval[string](tb, `document.getElementById('events').innerText`)
	for _, s := range []string{"Answer in one sentence.", "What is a cairn?", "Noted: What is a cairn?", "run.completed", "turn.planned"} {
		if !strings.Contains(text, s) {
			t.Errorf("all events lack %q", s)
		}
	}
	tb.wait(`document.querySelector('#runs details.run[open] .run-output')`)
	if out := eval[string](tb, `document.querySelector('#runs details.run[open] .run-output').textContent`); out != "Noted: What is a cairn?" {
		t.Errorf("the runs panel shows output %q", out)
	}
	tb.shot("session")
}

// transcriptSeqs reads the seqs of the transcript's rows, in page order.
const transcriptSeqs = `[...document.querySelectorAll('#events li.ev')].map(li => Number(li.dataset.seq))`

func checkContiguous(t *testing.T, seqs []int64, from, to int64) {
	t.Helper()
	if len(seqs) != int(to-from+1) {
		t.Fatalf("the transcript shows %d rows, want %d (events %d to %d)", len(seqs), to-from+1, from, to)
	}
	for i, s := range seqs {
		if s != from+int64(i) {
			t.Fatalf("row %d is event %d, want %d: rows are missing, repeated or out of order", i, s, from+int64(i))
		}
	}
}

func TestTranscriptPagingWithKeys(t *testing.T) {
	t.Parallel()
	in := newInstance(t, instanceOptions{seed: func(ctx context.Context, st *sqlite.Store) {
		seedSession(ctx, t, st, "long", 180, time.Now().Add(-time.Hour))
	}})
	tb := newTab(t)
	tb.open(in.url + "/sessions/long?events=all") // every row visible: the keys scroll through all
	tb.wait(`document.querySelector('#events[data-ready="1"]')`)
	checkContiguous(t, eval[[]int64](tb, transcriptSeqs), 131, 180)
	if !strings.Contains(eval[string](tb, `document.getElementById('transcript-keys').textContent`), "PgUp") {
		t.Error("the page does not document its keys")
	}

	// One page with the button, the rest with the keyboard.
	tb.do(chromedp.ScrollIntoView(chromedp.ID("older")))
	tb.click("#older")
	tb.wait(`document.getElementById('events').dataset.pages === "2"`)
	checkContiguous(t, eval[[]int64](tb, transcriptSeqs), 81, 180)
	presses := 0
	for !eval[bool](tb, `!!document.getElementById('transcript-start')`) {
		if presses++; presses > 200 {
			t.Fatal("k never reached the start of the session")
		}
		tb.key("k")
		tb.wait(`!document.querySelector('#older:disabled')`) // no page is loading
	}
	checkContiguous(t, eval[[]int64](tb, transcriptSeqs), 1, 180)
	if pages := eval[string](tb, `document.getElementById('events').dataset.pages`); pages != "4" {
		t.Errorf("read %s pages, want 4 (50 events each, then 30)", pages)
	}
	var older int
	for _, c := range in.rpc.all() {
		if c.Method == "session/transcript/read" && c.Browser {
			older++
		}
	}
	if older != 4 {
		t.Errorf("the page read the transcript %d times, want 4 (the latest page and 3 older ones)", older)
	}
	// The last page went in above what the reader saw; k scrolls up to it.
	for presses = 0; eval[float64](tb, `document.getElementById('transcript').scrollTop`) > 1; presses++ {
		if presses > 50 {
			t.Fatal("k never scrolled to the top")
		}
		tb.key("k")
	}
	if first := eval[int64](tb, `(() => {
		const s = document.getElementById('transcript').getBoundingClientRect();
		return Number([...document.querySelectorAll('#events li.ev')].find(li => li.getBoundingClientRect().bottom > s.top).dataset.seq);
	})()`); first != 1 {
		t.Errorf("at the top the first visible event is %d, want 1", first)
	}
	tb.shot("start")

	// j pages forward; End goes to the newest event.
	before := eval[float64](tb, `document.getElementById('transcript').scrollTop`)
	tb.key("j")
	if after := eval[float64](tb, `document.getElementById('transcript').scrollTop`); after <= before {
		t.Errorf("j did not page forward: scrollTop %v → %v", before, after)
	}
	tb.do(chromedp.KeyEvent(kb.End))
	tb.wait(`(() => { const s = document.getElementById('transcript'); return s.scrollHeight - s.scrollTop - s.clientHeight < 2; })()`)
}

func TestLiveFollowAppendsWithoutLayoutJumps(t *testing.T) {
	t.Parallel()
	in := newInstance(t, instanceOptions{seed: func(ctx context.Context, st *sqlite.Store) {
		seedSession(ctx, t, st, "live", 120, time.Now().Add(-time.Hour))
	}})
	tb := newTab(t)
	tb.open(in.url + "/sessions/live")
	tb.wait(`document.querySelector('#events[data-ready="1"]')`)
	tb.wait(`document.getElementById('live').dataset.state === 'live'`)

	// Read from the middle of the page, then let a run start.
	anchor := eval[int64](tb, `(() => {
		const s = document.getElementById('transcript');
		s.scrollTop = (s.scrollHeight - s.clientHeight) / 2;
		const top = s.getBoundingClientRect().top;
		const li = [...document.querySelectorAll('#events li.ev')].find(li => li.getBoundingClientRect().top >= top);
		window.__anchorTop = li.getBoundingClientRect().top;
		return Number(li.dataset.seq);
	})()`)
	in.chat.setDelay(1500 * time.Millisecond)
	r, err := in.client.StartRun(context.Background(), api.RunStartParams{SessionID: "live", Input: []api.InputPart{{Type: "text", Text: "Summarise the thread so far"}}})
	if err != nil {
		t.Fatal(err)
	}

	// The run's first events arrive while the model is still answering.
	tb.wait(`!!document.querySelector('#events li[data-kind="run.accepted"][data-seq="121"]')`)
	if rr, err := in.client.ReadRun(context.Background(), "live", r.RunID); err != nil || rr.Status != "running" {
		t.Fatalf("the run is %q (%v) when its first event shows, want running", rr.Status, err)
	}
	tb.wait(`!!document.querySelector('#events li[data-kind="turn.generation_requested"]')`)
	tb.shot("running")
	tb.wait(`!!document.querySelector('#events li[data-kind="run.completed"]')`)

	moved := eval[float64](tb, fmt.Sprintf(`document.querySelector('#events li[data-seq="%d"]').getBoundingClientRect().top - window.__anchorTop`, anchor))
	if moved != 0 {
		t.Errorf("event %d moved by %vpx while new events arrived below it", anchor, moved)
	}
	head, err := in.client.ReadSession(context.Background(), "live")
	if err != nil {
		t.Fatal(err)
	}
	tb.wait(fmt.Sprintf(`document.querySelectorAll('#events li.ev').length === %d`, head.Head-70))
	checkContiguous(t, eval[[]int64](tb, transcriptSeqs), 71, head.Head)
	if pill := eval[string](tb, `(() => { const p = document.getElementById('new-events'); return p.hidden ? '' : p.textContent; })()`); !strings.Contains(pill, "new events") {
		t.Errorf("the new-events pill says %q", pill)
	}
	tb.click("#new-events")
	tb.wait(`document.getElementById('new-events').hidden`)
	if !strings.Contains(eval[string](tb, `document.querySelector('#events li[data-kind="run.completed"]').innerText`), "Noted: Summarise the thread so far") {
		t.Error("the run's output is not in the transcript")
	}
	tb.wait(`document.querySelector('[data-chip="active"]').textContent.includes('none')`)
	tb.shot("followed")
}

// TestLeavingAPageEndsItsLongPoll goes back and forth between two session
// pages more often than a browser opens connections to one server (six):
// each page's long poll must end when the page is left, or the next page's
// reads would queue behind the polls of pages kept in the back-forward cache.
func TestLeavingAPageEndsItsLongPoll(t *testing.T) {
	t.Parallel()
	in := newInstance(t, instanceOptions{seed: func(ctx context.Context, st *sqlite.Store) {
		seedSession(ctx, t, st, "one", 20, time.Now().Add(-time.Hour))
		seedSession(ctx, t, st, "two", 30, time.Now().Add(-time.Hour))
	}})
	tb := newTab(t)
	for i := range 8 {
		id := []string{"one", "two"}[i%2]
		tb.open(in.url + "/sessions/" + id)
		tb.wait(`!!document.querySelector('#events[data-ready="1"]') && document.getElementById('live').dataset.state === 'live' &&
			!!document.querySelector('#session-chips .chip') && !!document.querySelector('#runs p, #runs details')`)
	}
	tb.shot("eighth-page")
}

func eventCount(n int64) string {
	if n == 1 {
		return "1 event"
	}
	return fmt.Sprintf("%d events", n)
}

// A refusal is the run's answer: the transcript and the runs panel show its
// text, marked as a refusal.
func TestRefusalIsMarked(t *testing.T) {
	t.Parallel()
	in := newInstance(t, instanceOptions{})
	in.chat.setReply(func(string) string { return refusePrefix + "I can't help with that." })
	in.createSession(t, "r", "")
	in.runToEnd(t, "r", "Pick the lock")

	tb := newTab(t)
	tb.open(in.url + "/sessions/r")
	tb.wait(`document.querySelector('#events[data-ready="1"]')`)
	tb.wait(`document.querySelector('#events .label.refusal')`)
	if text := eval[string](tb, `document.querySelector('#events .label.refusal').closest('.content').innerText`); !strings.Contains(text, "I can't help with that.") {
		t.Errorf("the refusal mark is not on the refusal's text: %q", text)
	}
	tb.wait(`document.querySelector('#runs details.run[open] .label.refusal')`)
	if out := eval[string](tb, `document.querySelector('#runs details.run[open] .run-output').textContent`); out != "I can't help with that." {
		t.Errorf("the runs panel shows output %q", out)
	}
}

// teamWithReviewer makes the workspace "team" with a sub-agent "reviewer".
func teamWithReviewer(t *testing.T, in *instance) {
	t.Helper()
	ctx := context.Background()
	if _, err := in.client.CreateWorkspace(ctx, api.WorkspaceCreateParams{Workspace: "team"}); err != nil {
		t.Fatal(err)
	}
	if _, err := in.client.WriteFile(ctx, api.FileWriteParams{Workspace: "team", Path: ".cairn/agents/reviewer.md",
		Data: []byte("---\ndescription: Reviews.\n---\nYou review.\n")}); err != nil {
		t.Fatal(err)
	}
}

// The inspector links a parent's agent_run call to the sub-agent's
// session, and the sub-agent's page back to its parent.
func TestSubAgentSessionsAreLinked(t *testing.T) {
	t.Parallel()
	in := newInstance(t, instanceOptions{})
	ctx := context.Background()
	teamWithReviewer(t, in)
	var mu sync.Mutex
	parentCalls := 0
	in.chat.setReply(func(user string) string {
		if user == "Review it" {
			return "LGTM"
		}
		mu.Lock()
		defer mu.Unlock()
		if parentCalls++; parentCalls == 1 {
			return callPrefix + `agent_run|{"agent":"reviewer","input":"Review it"}`
		}
		return "Reviewed."
	})
	if _, err := in.client.CreateSession(ctx, api.CreateSessionParams{SessionID: "p", Model: fakeModel, Tools: []string{runtime.AgentRunTool},
		Links: []api.LinkParam{{Mount: "/work", Workspace: "team"}}}); err != nil {
		t.Fatal(err)
	}
	in.runToEnd(t, "p", "Get it reviewed")
	child := runtime.ChildSessionID("p", "call_1")

	tb := newTab(t)
	tb.open(in.url + "/sessions/p")
	tb.wait(`document.querySelector('#events[data-ready="1"]')`)
	link := `#events a[href="/sessions/` + child + `"]`
	tb.wait(`document.querySelector('` + link + `')`)
	tb.click(link)
	tb.wait(`location.pathname === '/sessions/` + child + `' && document.querySelector('#events[data-ready="1"]')`)
	tb.wait(`document.querySelector('a[href="/sessions/p"]')`)
	if text := eval[string](tb, `document.getElementById('events').innerText`); !strings.Contains(text, "LGTM") {
		t.Errorf("the sub-agent's transcript lacks its answer: %q", text)
	}
}

// A streamed answer shows in place as it arrives, and gives way to the
// committed answer.
func TestStreamingAnswerShowsInPlace(t *testing.T) {
	t.Parallel()
	in := newInstance(t, instanceOptions{stream: true})
	in.chat.setReply(func(string) string { return "Cairns mark trails in the hills." })
	in.createSession(t, "s", "")
	tb := newTab(t)
	tb.open(in.url + "/sessions/s")
	tb.wait(`document.querySelector('#events[data-ready="1"]')`)
	if _, err := in.client.StartRun(context.Background(), api.RunStartParams{SessionID: "s", Input: []api.InputPart{{Type: "text", Text: "What is a cairn?"}}}); err != nil {
		t.Fatal(err)
	}
	tb.wait(`document.querySelector('#events li.streaming pre')?.textContent === 'Cairns mark trai'`)
	in.chat.release <- struct{}{}
	tb.wait(`!document.querySelector('#events li.streaming') && document.getElementById('events').innerText.includes('Cairns mark trails in the hills.')`)
}
