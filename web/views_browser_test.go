package web

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store/sqlite"
)

func putBlob(t *testing.T, in *instance, data []byte, mediaType string) content.ContentRef {
	t.Helper()
	r, err := in.client.PutBlob(context.Background(), data, mediaType)
	if err != nil {
		t.Fatal(err)
	}
	return r.Ref
}

// tinyPNG is a 3×2 image.
func tinyPNG(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	for x := range 3 {
		img.Set(x, 0, color.RGBA{R: 47, G: 107, B: 103, A: 255})
		img.Set(x, 1, color.RGBA{R: 176, G: 94, B: 42, A: 255})
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// toneWAV is a quarter second of a 440 Hz tone, 8 kHz 16-bit mono PCM.
func toneWAV() []byte {
	const rate, n = 8000, 2000
	var pcm bytes.Buffer
	for i := range n {
		_ = binary.Write(&pcm, binary.LittleEndian, int16(8000*math.Sin(2*math.Pi*440*float64(i)/rate)))
	}
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + pcm.Len()))
	b.WriteString("WAVEfmt ")
	w(uint32(16))
	w(uint16(1)) // PCM
	w(uint16(1)) // mono
	w(uint32(rate))
	w(uint32(rate * 2))
	w(uint16(2))
	w(uint16(16))
	b.WriteString("data")
	w(uint32(pcm.Len()))
	b.Write(pcm.Bytes())
	return b.Bytes()
}

// downloadedBytes fetches the page's download link and returns its bytes.
const downloadedBytes = `fetch(document.getElementById('download').href).then(r => r.arrayBuffer()).then(b => {
	let s = ''; for (const x of new Uint8Array(b)) s += String.fromCharCode(x); return btoa(s); })`

func blobURL(in *instance, ref content.Digest, mediaType string) string {
	u := in.url + "/blobs/" + url.PathEscape(ref.String())
	if mediaType != "" {
		u += "?type=" + url.QueryEscape(mediaType)
	}
	return u
}

func TestBlobPage(t *testing.T) {
	t.Parallel()
	in := newInstance(t, instanceOptions{})
	doc := []byte(`{"name":"cairn","stones":[3,2,1],"nested":{"deep":{"deeper":{"deepest":true}}},"note":null}`)
	jsonRef := putBlob(t, in, doc, "application/json")
	text := "Plain words.\nA second line, with <b>markup</b> that must stay text."
	textRef := putBlob(t, in, []byte(text), "text/plain; charset=utf-8")
	pngBytes := tinyPNG(t)
	pngRef := putBlob(t, in, pngBytes, "image/png")
	wav := toneWAV()
	wavRef := putBlob(t, in, wav, "audio/wav")
	tb := newTab(t)

	// JSON, typed by the link: pretty, folded below the third level, and
	// downloadable as the exact bytes under the ref's name.
	tb.open(blobURL(in, jsonRef.Digest, "application/json"))
	tb.wait(`!!document.querySelector('#blob-json details')`)
	folds := eval[[]bool](tb, `[...document.querySelectorAll('#blob-json details')].map(d => d.open)`)
	if len(folds) != 5 || !folds[0] || folds[len(folds)-1] {
		t.Errorf("the JSON tree's details are open %v: want the outer levels open and the deepest folded", folds)
	}
	if got := eval[string](tb, `document.getElementById('blob-json').innerText`); !strings.Contains(got, `"cairn"`) || !strings.Contains(got, `"stones"`) {
		t.Errorf("the JSON tree shows %q", got)
	}
	if dl := eval[string](tb, `document.getElementById('download').download`); dl != jsonRef.Digest.String() {
		t.Errorf("the download is named %q, want the ref %s", dl, jsonRef.Digest)
	}
	if got := eval[string](tb, downloadedBytes); got != base64.StdEncoding.EncodeToString(doc) {
		t.Errorf("the download holds %q, want the stored bytes", got)
	}
	tb.shot("json")

	// Text without a type: sniffed, and shown as text, never as markup.
	tb.open(blobURL(in, textRef.Digest, ""))
	tb.wait(`!!document.getElementById('blob-text')`)
	if got := eval[string](tb, `document.getElementById('blob-text').textContent`); got != text {
		t.Errorf("the text blob shows %q", got)
	}
	if got := eval[string](tb, `document.getElementById('blob-type').textContent`); got != "text/plain; charset=utf-8" {
		t.Errorf("the text blob was sniffed as %q", got)
	}

	// An image inline.
	tb.open(blobURL(in, pngRef.Digest, "image/png"))
	tb.wait(`(() => { const i = document.getElementById('blob-image'); return i && i.complete && i.naturalWidth === 3 && i.naturalHeight === 2; })()`)
	if got := eval[string](tb, downloadedBytes); got != base64.StdEncoding.EncodeToString(pngBytes) {
		t.Error("the image's download differs from the stored bytes")
	}
	tb.shot("image")

	// Audio without a type: sniffed as WAV and playable.
	tb.open(blobURL(in, wavRef.Digest, ""))
	tb.wait(`(() => { const a = document.getElementById('blob-audio'); return a && a.readyState >= 1 && Math.abs(a.duration - 0.25) < 0.01; })()`)
	if got := eval[string](tb, `document.getElementById('blob-type').textContent`); got != "audio/wav" {
		t.Errorf("the audio blob was sniffed as %q", got)
	}

	// From a session: a transcript's ref link opens the blob with its type.
	in.createSession(t, "refs", "")
	in.runToEnd(t, "refs", "Show me the stored answer")
	tb.open(in.url + "/sessions/refs")
	tb.wait(`!!document.querySelector('#events .content[data-role="assistant"] a.ref')`)
	tb.click(`#events .content[data-role="assistant"] a.ref`)
	tb.wait(`location.pathname.startsWith('/blobs/sha256') && !!document.querySelector('#blob-json')`)
	if q := eval[string](tb, `location.search`); q != "?type=application%2Fjson" {
		t.Errorf("the link carried %q, want the entry's media type", q)
	}
	if got := eval[string](tb, `document.getElementById('blob-json').innerText`); !strings.Contains(got, "Noted: Show me the stored answer") {
		t.Errorf("the assistant message's blob shows %q", got)
	}
	// The page says what holds the blob and leads back to the session.
	tb.wait(`!!document.querySelector('#blob-holders').dataset.held`)
	if held := eval[string](tb, `document.querySelector('#blob-holders').dataset.held`); held != "true" {
		t.Errorf("the assistant message's blob is held %q", held)
	}
	if got := eval[[]string](tb, `[...document.querySelectorAll('#held-sessions a')].map(a => a.textContent)`); len(got) != 1 || got[0] != "refs" {
		t.Errorf("the blob's sessions are %q, want refs", got)
	}
	tb.shot("holders")
	tb.click(`#held-sessions a`)
	tb.wait(`location.pathname === '/sessions/refs'`)

	// A blob nothing holds says so, and when it may go.
	tb.open(blobURL(in, textRef.Digest, ""))
	tb.wait(`!!document.getElementById('blob-fate')`)
	if eval[string](tb, `document.querySelector('#blob-holders').dataset.held`) != "false" || !eval[bool](tb, `!!document.getElementById('held-nothing')`) ||
		!strings.Contains(eval[string](tb, `document.getElementById('blob-fate').textContent`), "may be collected after") {
		t.Errorf("an unheld blob's holders section reads %q", eval[string](tb, `document.getElementById('blob-holders').textContent`))
	}
}

func TestContextAtEarlierSeqAndDiff(t *testing.T) {
	t.Parallel()
	in := newInstance(t, instanceOptions{})
	in.createSession(t, "ctx", "You keep notes.")
	in.runToEnd(t, "ctx", "First note")
	first, err := in.client.ReadSession(context.Background(), "ctx")
	if err != nil {
		t.Fatal(err)
	}
	in.runToEnd(t, "ctx", "Second note")
	in.runToEnd(t, "ctx", "Third note")
	now, err := in.client.ReadSession(context.Background(), "ctx")
	if err != nil {
		t.Fatal(err)
	}
	at := first.Head // the end of the first run
	want, err := in.client.ReadContextAt(context.Background(), "ctx", at)
	if err != nil {
		t.Fatal(err)
	}

	tb := newTab(t)
	tb.open(in.url + "/sessions/ctx?panel=context")
	tb.wait(`(document.getElementById('ctx-summary')?.textContent || '').startsWith('Now')`)
	if n := eval[int](tb, `document.querySelectorAll('#ctx-result li[data-entry]').length`); n != 7 {
		t.Errorf("the context now lists %d entries, want 7 (instructions and three exchanges)", n)
	}
	tb.do(setValue("#ctx-at", fmt.Sprint(at)))
	tb.click(`#ctx-form button[type="submit"]`)
	tb.wait(fmt.Sprintf(`(document.getElementById('ctx-summary')?.textContent || '').startsWith('After event %d')`, at))
	got := eval[[]string](tb, `[...document.querySelectorAll('#ctx-result li[data-entry]')].map(li => li.dataset.entry)`)
	var ids []string
	for _, e := range want.Entries {
		ids = append(ids, e.ID)
	}
	if !slices.Equal(got, ids) {
		t.Errorf("the context after event %d lists %v, want %v", at, got, ids)
	}
	tb.shot("at-seq")

	// A seq in the transcript opens the context after that event.
	tb.click(`#events li[data-seq="2"] button.seq`)
	tb.wait(`(document.getElementById('ctx-summary')?.textContent || '').startsWith('After event 2 ')`)
	if n := eval[int](tb, `document.querySelectorAll('#ctx-result li[data-entry]').length`); n != 1 {
		t.Errorf("the context after event 2 lists %d entries, want the instructions alone", n)
	}

	// The diff between the first run's end and now.
	diff, err := in.client.DiffContext(context.Background(), api.ContextDiffParams{SessionID: "ctx", FromSeq: at, ToSeq: now.Head})
	if err != nil {
		t.Fatal(err)
	}
	tb.do(setValue("#diff-from", fmt.Sprint(at)), setValue("#diff-to", fmt.Sprint(now.Head)))
	tb.click(`#diff-form button[type="submit"]`)
	tb.wait(`!!document.querySelector('#ctx-result [data-diff="added"]')`)
	counts := eval[map[string]int](tb, `Object.fromEntries([...document.querySelectorAll('#ctx-result [data-diff]')].map(s => [s.dataset.diff, s.querySelectorAll('li').length]))`)
	if counts["added"] != len(diff.Added) || counts["removed"] != len(diff.Removed) || counts["superseded"] != len(diff.Superseded) || len(diff.Added) != 4 {
		t.Errorf("the diff shows %v, want added %d, removed %d, superseded %d", counts, len(diff.Added), len(diff.Removed), len(diff.Superseded))
	}
	tb.shot("diff")
}

type chartTurn struct {
	Seq     int64  `json:"seq"`
	Request int64  `json:"request"`
	Prefix  int64  `json:"prefix"`
	Cached  string `json:"cached"`
	Height  float64
}

func TestCacheChartMatchesReport(t *testing.T) {
	t.Parallel()
	in := newInstance(t, instanceOptions{})
	in.createSession(t, "cache", "You answer questions about the cache. "+strings.Repeat("Keep the prefix stable. ", 20))
	for i := range 5 {
		in.runToEnd(t, "cache", fmt.Sprintf("Question %d: how much of this request was reused?", i+1))
	}
	report, err := in.client.CacheReport(context.Background(), api.CacheReportParams{SessionID: "cache"})
	if err != nil {
		t.Fatal(err)
	}
	tb := newTab(t)
	tb.open(in.url + "/sessions/cache?panel=cache")
	tb.wait(`!!document.querySelector('#cache-chart g.turn')`)
	read := func(sel string) []chartTurn {
		return eval[[]chartTurn](tb, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => ({
			seq: Number(e.dataset.seq), request: Number(e.dataset.requestBytes), prefix: Number(e.dataset.prefixBytes), cached: e.dataset.cachedTokens,
			Height: e.querySelector('.bar-request') ? Number(e.querySelector('.bar-request').getAttribute('height')) : 0}))`, sel))
	}
	bars, rows := read("#cache-chart g.turn"), read("#cache-table tbody tr[data-seq]")
	if len(report.Turns) != 5 || len(bars) != 5 || len(rows) != 5 {
		t.Fatalf("%d generations in the report, %d bars, %d table rows; want 5 of each", len(report.Turns), len(bars), len(rows))
	}
	cachedSeen := false
	for i, want := range report.Turns {
		cached := ""
		if want.ProviderCachedTokens != nil {
			cached = fmt.Sprint(*want.ProviderCachedTokens)
			cachedSeen = cachedSeen || *want.ProviderCachedTokens > 0
		}
		for _, got := range []chartTurn{bars[i], rows[i]} {
			if got.Seq != want.Seq || got.Request != want.RequestBytes || got.Prefix != want.PrefixBytes || got.Cached != cached {
				t.Errorf("generation %d shows %+v, want seq %d, request %d, prefix %d, cached %q", i, got, want.Seq, want.RequestBytes, want.PrefixBytes, cached)
			}
		}
		// Bars are drawn to one scale: heights are proportional to bytes.
		if ratio, want := bars[i].Height/bars[0].Height, float64(want.RequestBytes)/float64(report.Turns[0].RequestBytes); math.Abs(ratio-want) > 0.01 {
			t.Errorf("bar %d is %.3f times the first, want %.3f", i, ratio, want)
		}
	}
	if !cachedSeen {
		t.Error("the fake provider reported no cached tokens: the chart's third series went untested")
	}
	tb.shot("cache")

	// The token axis has five distinct, whole tick labels however few
	// tokens were cached (one cached token once gave 2, 2, 1, 1, 0).
	for _, most := range []int{1, 2, 3, 7, 10, 64, 1000, 123456} {
		labels := eval[[]string](tb, fmt.Sprintf(`import(document.querySelector('link[href$="chart.js"]').href).then(m => [...m.cacheChart([
			{seq: 1, runId: 'r', turn: 1, requestBytes: 100, prefixBytes: 0, providerCachedTokens: 0},
			{seq: 2, runId: 'r', turn: 2, requestBytes: 200, prefixBytes: 100, providerCachedTokens: %d}]).querySelectorAll('text.tok')].map(e => e.textContent))`, most))
		seen := map[string]bool{}
		for _, l := range labels {
			if seen[l] || strings.ContainsAny(l, ".") {
				t.Errorf("with at most %d cached tokens the axis reads %q: a repeated or fractional label", most, labels)
			}
			seen[l] = true
		}
		if len(labels) != 5 {
			t.Errorf("with at most %d cached tokens the axis has %d labels", most, len(labels))
		}
	}

	// The storage report, or a quiet note where the server has none.
	var usage api.StorageReportResult
	storageErr := in.client.Call(context.Background(), "storage/report", api.StorageReportParams{SessionID: "cache"}, &usage)
	tb.click("#tab-storage")
	tb.wait(`!!document.getElementById('storage').dataset.state`)
	state := eval[string](tb, `document.getElementById('storage').dataset.state`)
	var rpcErr *api.Error
	switch {
	case errors.As(storageErr, &rpcErr) && rpcErr.Code == api.CodeMethodNotFound:
		if state != "unavailable" || !strings.Contains(eval[string](tb, `document.getElementById('storage').textContent`), "not available") {
			t.Errorf("without storage/report the panel is %q", state)
		}
	case storageErr == nil:
		got := eval[string](tb, `document.querySelector('#storage [data-fact="logicalBytes"]')?.dataset.value || ''`)
		if state != "ready" || len(usage.Sessions) != 1 || got != fmt.Sprint(usage.Sessions[0].LogicalBytes) {
			t.Errorf("the storage panel (%s) shows logical bytes %q, want %+v", state, got, usage.Sessions)
		}
	default:
		t.Fatalf("storage/report: %v", storageErr)
	}
	tb.shot("storage")
}

// seedContext writes a session whose context holds n unkeyed messages
// straight into the store, with a checkpoint at its head.
func seedContext(ctx context.Context, t testing.TB, st *sqlite.Store, id string, n int) {
	t.Helper()
	ref, err := blob.PutRef(ctx, st, []byte(seedTexts[0]), content.MediaText, "")
	if err != nil {
		t.Fatal(err)
	}
	state := core.NewState()
	var pending []core.Proposal
	admit := func(cmd core.Command) {
		a, err := core.Admit(state, cmd)
		if err != nil {
			t.Fatalf("seeding %s: %v", id, err)
		}
		for _, p := range a.Proposals {
			if err := state.Apply(p.Committed(state.Head + 1)); err != nil {
				t.Fatalf("seeding %s: %v", id, err)
			}
			pending = append(pending, p)
		}
	}
	admit(core.OpenSession{AtMs: 1, SessionID: id, Config: core.SessionConfig{Model: fakeModel}})
	for i := range n {
		admit(core.AppendContext{AtMs: int64(2 + i), Entries: []core.EntryInput{{Kind: core.EntryMessage, Role: core.RoleUser, Content: ref,
			TokenEstimate: provider.Estimate([]byte(seedTexts[0])), Preview: fmt.Sprintf("note %d", i)}}})
	}
	if _, err := st.Append(ctx, id, 0, pending); err != nil {
		t.Fatalf("seeding %s: %v", id, err)
	}
	if err := runtime.WriteCheckpoint(ctx, st, st, state); err != nil {
		t.Fatalf("seeding %s: %v", id, err)
	}
}

// A context longer than one page of session/context/read is shown whole:
// the panel follows the cursor.
func TestContextPanelReadsEveryPage(t *testing.T) {
	t.Parallel()
	const n = 1204
	in := newInstance(t, instanceOptions{seed: func(ctx context.Context, st *sqlite.Store) { seedContext(ctx, t, st, "long", n) }})
	tb := newTab(t)
	tb.open(in.url + "/sessions/long?panel=context")
	tb.wait(`(document.getElementById('ctx-summary')?.textContent || '').startsWith('Now')`)
	if got := eval[int](tb, `document.querySelectorAll('#ctx-result li[data-entry]').length`); got != n {
		t.Errorf("the context lists %d entries, want %d", got, n)
	}
	if last := eval[string](tb, `[...document.querySelectorAll('#ctx-result li[data-entry]')].pop().dataset.entry`); last != core.EntryID(n) {
		t.Errorf("the last entry listed is %s, want %s", last, core.EntryID(n))
	}
	if !strings.Contains(eval[string](tb, `document.getElementById('ctx-summary').textContent`), "1,204 entries") {
		t.Errorf("the summary says %q", eval[string](tb, `document.getElementById('ctx-summary').textContent`))
	}
	reads := 0
	for _, c := range in.rpc.all() {
		if c.Method == "session/context/read" {
			reads++
		}
	}
	if reads != 3 {
		t.Errorf("the page made %d session/context/read calls, want the panel's 2 pages of at most 1,000 and the header's one read of the instructions", reads)
	}
}
