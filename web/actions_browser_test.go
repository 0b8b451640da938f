package web

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store/sqlite"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// readMethods are what the page may call without the user asking; the
// only writes are the three run actions and approval decisions.
var readMethods = []string{"session/list", "session/read", "session/transcript/read", "session/events/read",
	"session/context/read", "session/context/diff", "session/runs/list", "session/runs/read",
	"session/cache/report", "storage/report", "blobs/read", "session/approvals/pending"}

func TestRunActionsAreTheOnlyWrites(t *testing.T) {
	t.Parallel()
	in := newInstance(t, instanceOptions{})
	in.createSession(t, "act", "")
	tb := newTab(t)
	tb.open(in.url + "/sessions/act")
	tb.wait(`document.querySelector('#events[data-ready="1"]') && document.getElementById('live').dataset.state === 'live'`)

	// Start a run from the composer; its output arrives live.
	tb.do(chromedp.SendKeys(chromedp.CSS("#composer textarea"), "Draft a haiku about stones"))
	tb.click(`#composer button[data-action="start"]`)
	tb.wait(`[...document.querySelectorAll('#events li[data-kind="run.completed"]')].some(li => li.innerText.includes('Noted: Draft a haiku about stones'))`)

	// A slow run: steer it, then cancel it.
	in.chat.setDelay(20 * time.Second)
	tb.do(chromedp.SendKeys(chromedp.CSS("#composer textarea"), "Write a long essay"))
	tb.click(`#composer button[data-action="start"]`)
	tb.wait(`!document.querySelector('#composer button[data-action="steer"]').disabled`)
	tb.do(chromedp.SendKeys(chromedp.CSS("#composer textarea"), "Keep it short"))
	tb.click(`#composer button[data-action="steer"]`)
	tb.wait(`!!document.querySelector('#events li[data-kind="run.steering_accepted"]')`)
	if got := eval[string](tb, `document.querySelector('#events li[data-kind="run.steering_accepted"]').innerText`); !strings.Contains(got, "Keep it short") {
		t.Errorf("the steering row shows %q", got)
	}
	tb.click(`#composer button[data-action="cancel"]`)
	tb.wait(`!!document.querySelector('#events li[data-kind="run.cancelled"]')`)
	tb.wait(`document.querySelector('#composer button[data-action="cancel"]').disabled`)
	tb.shot("cancelled")

	writes := map[string]int{}
	for _, c := range in.rpc.all() {
		if !c.Browser || slices.Contains(readMethods, c.Method) {
			continue
		}
		writes[c.Method]++
	}
	want := map[string]int{"session/runs/start": 2, "session/runs/steer": 1, "session/runs/cancel": 1}
	if fmt.Sprint(writes) != fmt.Sprint(want) {
		t.Errorf("the page called %v beyond reads, want exactly %v", writes, want)
	}
}

// A call that waits for approval shows Approve and Deny in the composer;
// Approve decides it (the page's one write), and the run goes on.
func TestApprovalsAreDecidedFromTheComposer(t *testing.T) {
	t.Parallel()
	in := newInstance(t, instanceOptions{})
	var calls atomic.Int32
	in.chat.setReply(func(user string) string {
		if calls.Add(1) == 1 {
			return callPrefix + "vfs_list_dir"
		}
		return "Listed: " + user
	})
	ctx := context.Background()
	if _, err := in.client.CreateSession(ctx, api.CreateSessionParams{SessionID: "approve", Model: fakeModel,
		Tools: []string{"vfs_list_dir"}, Approvals: map[string]string{"vfs_list_dir": core.ApprovalAlways}}); err != nil {
		t.Fatal(err)
	}
	tb := newTab(t)
	tb.open(in.url + "/sessions/approve")
	tb.wait(`document.querySelector('#events[data-ready="1"]') && document.getElementById('live').dataset.state === 'live'`)
	if _, err := in.client.StartRun(ctx, api.RunStartParams{SessionID: "approve", Input: []api.InputPart{{Type: "text", Text: "list the files"}}}); err != nil {
		t.Fatal(err)
	}
	tb.wait(`!!document.querySelector('#approvals button[data-action="approve"]')`)
	if got := eval[string](tb, `document.getElementById('approvals').innerText`); !strings.Contains(got, "vfs_list_dir") || !strings.Contains(got, `{"path":"/"}`) {
		t.Errorf("the approval shows %q", got)
	}
	tb.click(`#approvals button[data-action="approve"]`)
	tb.wait(`[...document.querySelectorAll('#events li[data-kind="run.completed"]')].some(li => li.innerText.includes('Listed: list the files'))`)
	tb.wait(`!document.querySelector('#approvals button')`)

	writes := map[string]int{}
	for _, c := range in.rpc.all() {
		if !c.Browser || slices.Contains(readMethods, c.Method) {
			continue
		}
		writes[c.Method]++
	}
	if want := map[string]int{"session/approvals/decide": 1}; fmt.Sprint(writes) != fmt.Sprint(want) {
		t.Errorf("the page called %v beyond reads, want exactly %v", writes, want)
	}
}

func TestHostedModeAsksForTheKeyOnce(t *testing.T) {
	t.Parallel()
	const key = "ck-test-0123456789abcdef"
	in := newInstance(t, instanceOptions{apiKey: key, seed: func(ctx context.Context, st *sqlite.Store) {
		seedSession(ctx, t, st, "hosted", 12, time.Now().Add(-time.Hour))
	}})
	tb := newTab(t)
	var mu sync.Mutex
	var urls []string
	requests := chromedp.Events(tb.ctx, network.RequestWillBeSent)
	go func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			mu.Lock()
			urls = append(urls, ev.Request.URL+" "+ev.DocumentURL)
			mu.Unlock()
		}
	}()

	tb.open(in.url + "/sessions/hosted")
	tb.wait(`document.getElementById('key-dialog')?.open === true`)
	tb.shot("key-form")
	var before []rpcCall
	for _, c := range in.rpc.all() {
		if c.Browser {
			before = append(before, c)
		}
	}
	for _, c := range before {
		if c.Auth != "" || c.Status != 401 {
			t.Errorf("before the key, the page sent %+v", c)
		}
	}
	if len(before) == 0 || len(before) > 3 {
		t.Errorf("the page sent %d calls before asking for the key, want the few of its first render", len(before))
	}
	tb.do(chromedp.SendKeys(chromedp.CSS("#key-dialog input"), key+"\n"))
	tb.wait(`document.querySelector('#events[data-ready="1"]') && !document.getElementById('key-dialog').open`)
	if got := eval[string](tb, `sessionStorage.getItem('cairn.apiKey')`); got != key {
		t.Errorf("sessionStorage holds %q, want the key", got)
	}

	// A reload keeps the key: no form, and no call without it.
	tb.open(in.url + "/")
	tb.wait(`document.querySelectorAll('#sessions tbody tr[data-session]').length === 1`)
	if eval[bool](tb, `!!document.getElementById('key-dialog')?.open`) {
		t.Error("the key form came back after a reload")
	}
	for _, c := range in.rpc.all()[len(before):] {
		if c.Browser && c.Auth != "Bearer "+key {
			t.Errorf("after the key was given, the page sent %s with Authorization %q", c.Method, c.Auth)
		}
	}

	// A refused key asks again.
	tb.do(chromedp.Evaluate[chromedp.Void](`sessionStorage.setItem('cairn.apiKey', 'ck-wrong')`))
	tb.open(in.url + "/")
	tb.wait(`document.getElementById('key-dialog')?.open === true && document.querySelector('#key-dialog .dialog-note').textContent.includes('refused')`)

	mu.Lock()
	defer mu.Unlock()
	if len(urls) == 0 {
		t.Fatal("no network events were recorded")
	}
	for _, u := range urls {
		if strings.Contains(u, key) {
			t.Errorf("a URL carries the key: %s", u)
		}
	}
	if h := eval[string](tb, `location.href + document.cookie`); strings.Contains(h, key) {
		t.Errorf("the location or cookies carry the key: %s", h)
	}
}

// firstRender is one load of the session page, in ms from navigation
// start (the page's performance marks).
type firstRender struct {
	DCL      float64 `json:"dcl"`      // DOMContentLoaded
	Response float64 `json:"response"` // the first transcript page has arrived
	Built    float64 `json:"built"`    // its rows are in the document
	Mark     float64 `json:"mark"`     // laid out, scrolled to the newest event
	Rows     int     `json:"rows"`
}

// TestFirstRenderOf10000EventSession measures the session page of a
// 10,000-event session: time from navigation to the first transcript page
// on screen. The page reads one page of events, so the figure must not
// grow with the session. It is the one browser test not run in parallel:
// it times things.
func TestFirstRenderOf10000EventSession(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds a 10,000-event session")
	}
	start := time.Now()
	in := newInstance(t, instanceOptions{seed: func(ctx context.Context, st *sqlite.Store) {
		seedSession(ctx, t, st, "big", 10_000, time.Now().Add(-30*24*time.Hour))
		seedSession(ctx, t, st, "small", 100, time.Now().Add(-time.Hour))
	}})
	t.Logf("seeded 10,100 events in %v", time.Since(start).Round(time.Millisecond))
	tb := newTab(t)
	measure := func(id string, n int) []float64 {
		var marks []float64
		for range n {
			tb.open(in.url + "/sessions/" + id)
			tb.wait(`!!document.querySelector('#events[data-ready="1"]')`)
			m := eval[firstRender](tb, `(() => {
				const at = (name) => performance.getEntriesByName(name)[0].startTime;
				return {dcl: performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd,
					response: at('cairn:transcript-response'), built: at('cairn:transcript-rows'), mark: at('cairn:transcript-first-page'),
					rows: document.querySelectorAll('#events li.ev').length};
			})()`)
			if m.Rows != 50 {
				t.Fatalf("the first page of %s shows %d rows, want 50", id, m.Rows)
			}
			marks = append(marks, m.Mark)
			t.Logf("%s: DOMContentLoaded %.0f, transcript read %.0f, rows built %.0f, laid out %.0f (ms)", id, m.DCL, m.Response, m.Built, m.Mark)
			// Let the page's other reads finish, so the next load has the
			// server to itself.
			tb.wait(`!!document.querySelector('#session-chips .chip') && !!document.querySelector('#runs p, #runs details')`)
		}
		sort.Float64s(marks)
		return marks
	}
	cold := measure("big", 1)[0] // a fresh browser context: the assets come from the server
	big, small := measure("big", 5), measure("small", 5)
	tb.shot("big")
	t.Logf("first render (ms from navigation start to the first transcript page): cold %.0f; median of 5 warm loads: 10,000 events %.0f %v; 100 events %.0f %v",
		cold, big[2], big, small[2], small)
	report, _ := json.MarshalIndent(map[string]any{"events10000Ms": big, "events100Ms": small, "coldPassMs": cold}, "", "  ")
	path := filepath.Join(artifactsDir(t), "first-render.json")
	if err := os.WriteFile(path, report, 0o644); err != nil {
		t.Fatal(err)
	}
	if big[2] > 2000 {
		t.Errorf("the first page of a 10,000-event session took %.0f ms to render", big[2])
	}
}

// TestReadmeScreenshot renders the README's session page, whose cache
// panel must name the instruction edit that broke the prefix; with
// CAIRN_UPDATE_SCREENSHOT=1 its screenshot becomes docs/inspector.png.
func TestReadmeScreenshot(t *testing.T) {
	in := newInstance(t, instanceOptions{})
	answers := map[string]string{
		"Draft release notes for Acorn 2.0":    "## Acorn 2.0\n\n- Sync is up to three times faster on large trees.\n- The new `acorn doctor` command explains failed syncs.\n- Config files move to `acorn.toml`; see the migration guide.",
		"Lead with the migration guide.":       "## Acorn 2.0\n\nUpgrading? Start with the migration guide: config moves to `acorn.toml`, and `acorn migrate` converts it for you.\n\n- Sync is up to three times faster on large trees.\n- `acorn doctor` explains failed syncs.",
		"Add a thank-you to the contributors.": "Added a closing section:\n\n## Thank you\n\nForty-one people contributed to this release. Thank you for the patches, the reviews and the bug reports.",
		"Shorten the upgrade section.":         "Done: the upgrade section is now two sentences, with the `acorn migrate` command first.",
	}
	in.chat.setReply(func(user string) string {
		if a, ok := answers[user]; ok {
			return a
		}
		return "Noted."
	})
	ctx := context.Background()
	if _, err := in.client.CreateSession(ctx, api.CreateSessionParams{SessionID: "acorn-release-notes",
		Model:        core.ModelSelection{ProviderID: "openai", APIKind: core.APIChatCompletions, Model: "gpt-4o-mini"},
		Instructions: "You write release notes for Acorn, a file sync tool. Be concise."}); err != nil {
		t.Fatal(err)
	}
	in.runToEnd(t, "acorn-release-notes", "Draft release notes for Acorn 2.0")
	in.runToEnd(t, "acorn-release-notes", "Lead with the migration guide.")
	if _, err := in.client.AppendContext(ctx, api.ContextAppendParams{SessionID: "acorn-release-notes", Key: "instructions.main", Kind: "instructions",
		Text: "You write release notes for Acorn, a file sync tool. Keep every section under five bullets."}); err != nil {
		t.Fatal(err)
	}
	in.runToEnd(t, "acorn-release-notes", "Add a thank-you to the contributors.")
	in.runToEnd(t, "acorn-release-notes", "Shorten the upgrade section.")

	tb := newTab(t)
	tb.do(chromedp.EmulateViewport(1280, 800))
	tb.open(in.url + "/sessions/acorn-release-notes?panel=cache")
	tb.wait(`!!document.querySelector('#cache-chart g.turn') && !!document.querySelector('#session-chips .chip') && document.getElementById('live').dataset.state === 'live'`)
	broken := eval[string](tb, `[...document.querySelectorAll('#cache-table tr.broken-row')].map((r) => r.innerText).join('\n')`)
	if !strings.Contains(broken, "instructions.main") {
		t.Fatalf("the cache panel does not name the instruction edit that broke the prefix:\n%s", broken)
	}
	path := tb.shot("readme")
	if os.Getenv("CAIRN_UPDATE_SCREENSHOT") != "1" {
		return
	}
	png, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "docs", "inspector.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote docs/inspector.png (%d bytes)", len(png))
}
