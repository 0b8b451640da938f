package view_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider/anthropic"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/view"
)

var bg = context.Background()

// tlog is a hand-built session log on memory stores.
type tlog struct {
	t     *testing.T
	blobs *blob.Memory
	log   *store.Memory
	id    string
	head  int64
	entry int
}

func newTLog(t *testing.T) *tlog {
	t.Helper()
	blobs := blob.NewMemory()
	l := &tlog{t: t, blobs: blobs, log: store.NewMemory(blobs), id: "s1"}
	l.add(core.KindSessionOpened, core.SessionOpened{SessionID: "s1", Config: core.SessionConfig{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"}}})
	return l
}

func (l *tlog) put(data, mediaType, providerKind string) content.ContentRef {
	l.t.Helper()
	ref, err := blob.PutRef(bg, l.blobs, []byte(data), mediaType, providerKind)
	if err != nil {
		l.t.Fatal(err)
	}
	return ref
}

// add appends one event at the head and returns its seq.
func (l *tlog) add(kind string, payload any) int64 {
	l.t.Helper()
	evs, err := l.log.Append(bg, l.id, l.head, []core.Proposal{core.NewProposal(1000+l.head, []string{"run:r1"}, kind, payload)})
	if err != nil {
		l.t.Fatal(err)
	}
	l.head = evs[0].Seq
	return l.head
}

func (l *tlog) entries(es ...core.Entry) int64 {
	l.t.Helper()
	for i := range es {
		l.entry++
		es[i].ID = fmt.Sprintf("e%d", l.entry)
	}
	return l.add(core.KindContextEntriesApplied, core.ContextEntriesApplied{Entries: es})
}

// userMessage appends a plain-text user message entry.
func (l *tlog) userMessage(text string) int64 {
	l.t.Helper()
	return l.entries(core.Entry{Kind: core.EntryMessage, Role: core.RoleUser, Source: core.SourceUser, Content: l.put(text, content.MediaText, "")})
}

func read(t *testing.T, log store.SessionLog, blobs view.BlobReader, q view.TranscriptQuery) view.TranscriptPage {
	t.Helper()
	page, err := view.ReadTranscript(bg, log, blobs, "s1", q)
	if err != nil {
		t.Fatalf("ReadTranscript(%+v): %v", q, err)
	}
	return page
}

func seqs(p view.TranscriptPage) []int64 {
	out := make([]int64, len(p.Events))
	for i, ev := range p.Events {
		out[i] = ev.Seq
	}
	return out
}

func after(n int64) *int64 { return &n }

func wantPage(t *testing.T, name string, p view.TranscriptPage, want []int64, head, cursor int64) {
	t.Helper()
	if !slices.Equal(seqs(p), want) || p.Head != head || p.Cursor != cursor {
		t.Fatalf("%s: seqs %v head %d cursor %d, want %v head %d cursor %d", name, seqs(p), p.Head, p.Cursor, want, head, cursor)
	}
}

func TestTranscript_PagesBackwardFromHeadUntilSeqOne(t *testing.T) {
	l := newTLog(t)
	for i := range 6 {
		l.userMessage(fmt.Sprintf("message %d", i))
	} // seqs 1…7
	p1 := read(t, l.log, l.blobs, view.TranscriptQuery{Limit: 3})
	wantPage(t, "latest page", p1, []int64{5, 6, 7}, 7, 5)
	if got := *p1.Events[2].Display.Entries[0].Text; got != "message 5" {
		t.Fatalf("last event of the latest page shows %q", got)
	}
	p2 := read(t, l.log, l.blobs, view.TranscriptQuery{Before: p1.Cursor, Limit: 3})
	wantPage(t, "second page", p2, []int64{2, 3, 4}, 0, 2)
	p3 := read(t, l.log, l.blobs, view.TranscriptQuery{Before: p2.Cursor, Limit: 3})
	wantPage(t, "last page", p3, []int64{1}, 0, 0)
	// A page that ends exactly at seq 1 has no cursor either.
	p := read(t, l.log, l.blobs, view.TranscriptQuery{Before: 4, Limit: 3})
	wantPage(t, "page ending at seq 1", p, []int64{1, 2, 3}, 0, 0)
	// A whole session in one page.
	wantPage(t, "everything", read(t, l.log, l.blobs, view.TranscriptQuery{}), []int64{1, 2, 3, 4, 5, 6, 7}, 7, 0)
	if p1.Events[0].Kind != core.KindContextEntriesApplied || p1.Events[0].ObservedAtMs != 1004 || !slices.Equal(p1.Events[0].Joins, []string{"run:r1"}) || len(p1.Events[0].Payload) == 0 {
		t.Fatalf("raw event not kept: %+v", p1.Events[0])
	}
}

// hookLog runs a hook after Session, so a test can append between the head
// capture and the range read.
type hookLog struct {
	store.SessionLog
	afterSession func()
}

func (h hookLog) Session(ctx context.Context, id string) (core.Lifecycle, error) {
	lc, err := h.SessionLog.Session(ctx, id)
	if h.afterSession != nil {
		h.afterSession()
	}
	return lc, err
}

func TestTranscript_HeadIsCapturedAndOlderPagesDoNotMoveIt(t *testing.T) {
	l := newTLog(t)
	for i := range 4 {
		l.userMessage(fmt.Sprintf("m%d", i))
	} // seqs 1…5
	// An event committed after the head is captured is not in the latest page.
	once := sync.Once{}
	hl := hookLog{SessionLog: l.log, afterSession: func() { once.Do(func() { l.userMessage("racing") }) }}
	p1 := read(t, hl, l.blobs, view.TranscriptQuery{Limit: 2})
	wantPage(t, "latest page", p1, []int64{4, 5}, 5, 4)

	l.userMessage("m-late") // seq 7
	p2 := read(t, l.log, l.blobs, view.TranscriptQuery{Before: p1.Cursor, Limit: 2})
	wantPage(t, "older page while the log grows", p2, []int64{2, 3}, 0, 2)

	// Following forward from the captured head sees exactly what came after it.
	fwd := read(t, l.log, l.blobs, view.TranscriptQuery{After: after(p1.Head)})
	wantPage(t, "forward from the captured head", fwd, []int64{6, 7}, 7, 0)
	if got := *fwd.Events[0].Display.Entries[0].Text; got != "racing" {
		t.Fatalf("forward read shows %q first", got)
	}
}

func TestTranscript_AfterReadsForward(t *testing.T) {
	l := newTLog(t)
	for i := range 6 {
		l.userMessage(fmt.Sprintf("m%d", i))
	} // seqs 1…7
	wantPage(t, "after 0", read(t, l.log, l.blobs, view.TranscriptQuery{After: after(0), Limit: 2}), []int64{1, 2}, 7, 0)
	wantPage(t, "after 3", read(t, l.log, l.blobs, view.TranscriptQuery{After: after(3), Limit: 2}), []int64{4, 5}, 7, 0)
	wantPage(t, "after 5", read(t, l.log, l.blobs, view.TranscriptQuery{After: after(5)}), []int64{6, 7}, 7, 0)
	wantPage(t, "after the head", read(t, l.log, l.blobs, view.TranscriptQuery{After: after(7)}), []int64{}, 7, 0)
	// An event committed between the head capture and the read is returned,
	// and the head covers it, so a follower's next after is never past head.
	once := sync.Once{}
	hl := hookLog{SessionLog: l.log, afterSession: func() { once.Do(func() { l.userMessage("racing") }) }}
	wantPage(t, "after 6 while the log grows", read(t, hl, l.blobs, view.TranscriptQuery{After: after(6)}), []int64{7, 8}, 8, 0)
}

func TestTranscript_Limits(t *testing.T) {
	l := newTLog(t)
	for i := range 599 {
		l.userMessage(fmt.Sprintf("m%d", i))
	} // seqs 1…600
	p := read(t, l.log, l.blobs, view.TranscriptQuery{})
	if len(p.Events) != view.DefaultTranscriptLimit || p.Events[0].Seq != 551 || p.Cursor != 551 || p.Head != 600 {
		t.Fatalf("default page: %d events from %d, cursor %d, head %d", len(p.Events), p.Events[0].Seq, p.Cursor, p.Head)
	}
	if n := len(read(t, l.log, l.blobs, view.TranscriptQuery{Limit: 500}).Events); n != 500 {
		t.Fatalf("limit 500 read %d events", n)
	}
	if n := len(read(t, l.log, l.blobs, view.TranscriptQuery{After: after(0)}).Events); n != view.DefaultTranscriptLimit {
		t.Fatalf("default forward page read %d events", n)
	}
	for _, q := range []view.TranscriptQuery{
		{Limit: 501}, {Limit: -1}, {Before: -1}, {After: after(-1)},
		{Before: 10, After: after(2)}, {Before: 10, After: after(0)},
	} {
		_, err := view.ReadTranscript(bg, l.log, l.blobs, "s1", q)
		var qe *view.QueryError
		if !errors.As(err, &qe) {
			t.Errorf("query %+v: error %v, want a *view.QueryError", q, err)
		}
	}
	for _, q := range []view.TranscriptQuery{{}, {Before: 3}, {After: after(0)}} {
		if _, err := view.ReadTranscript(bg, l.log, l.blobs, "nobody", q); !errors.Is(err, store.ErrSessionNotFound) {
			t.Errorf("unknown session, query %+v: %v", q, err)
		}
	}
}

func TestTranscript_DisplayShowsTextInFullAndBoundsPreviews(t *testing.T) {
	l := newTLog(t)
	long := strings.Repeat("word ", 200) // 1000 bytes, well over the preview bound
	instr := l.put("be brief. "+long, content.MediaText, "")
	l.entries(core.Entry{Kind: core.EntryInstructions, Key: "instructions.main", Source: core.SourceAPI, Content: instr, Preview: "be brief."})
	input := l.put("question: "+long, content.MediaText, "")
	l.add(core.KindRunAccepted, core.RunAccepted{RunID: "r1", Input: []core.InputItem{{Content: input, Preview: "question:"}}})
	l.entries(core.Entry{Kind: core.EntryMessage, Role: core.RoleUser, Source: core.SourceUser, Content: input, Preview: "question:"})
	thinking := l.put(`{"type":"thinking","thinking":"let me think `+long+`","signature":"sig"}`, content.MediaJSON, anthropic.ProviderKindThinking)
	native, _ := json.Marshal(map[string]string{"role": "assistant", "content": "answer: " + long})
	answer := l.put(string(native), content.MediaJSON, chat.ProviderKindMessage)
	callEntry := l.put(`{"id":"c1","type":"function","function":{"name":"vfs_read","arguments":"{}"}}`, content.MediaJSON, chat.ProviderKindToolCall)
	l.entries(
		core.Entry{Kind: core.EntryReasoning, Role: core.RoleAssistant, Source: core.SourceModel, Content: thinking},
		core.Entry{Kind: core.EntryToolCall, Role: core.RoleAssistant, Source: core.SourceModel, Content: callEntry, CallID: "c1", ToolName: "vfs_read", Preview: "vfs_read(" + long + ")"},
	)
	args := l.put(`{"path":"`+long+`"}`, content.MediaJSON, "")
	callSeq := l.add(core.KindToolCallStarted, core.ToolCallStarted{RunID: "r1", Turn: 1, CallID: "c1", Name: "vfs_read", Arguments: args})
	awaitSeq := l.add(core.KindToolCallAwaiting, core.ToolCallAwaiting{RunID: "r1", Turn: 1, CallID: "c1", Name: "vfs_read"})
	askSeq := l.add(core.KindToolApprovalRequested, core.ToolApprovalRequested{RunID: "r1", Turn: 1, CallID: "c1", Name: "vfs_read"})
	decideSeq := l.add(core.KindToolApprovalDecided, core.ToolApprovalDecided{RunID: "r1", Turn: 1, CallID: "c1", Reason: "not now"})
	warnSeq := l.add(core.KindSessionWarning, core.SessionWarning{Source: "mcp:docs", Message: "docs was down"})
	resultBytes := "result: " + long
	result := l.put(resultBytes, content.MediaText, "")
	resultSeq := l.add(core.KindToolCallCompleted, core.ToolCallCompleted{RunID: "r1", Turn: 1, CallID: "c1", Status: core.CallOK, Result: result})
	l.entries(core.Entry{Kind: core.EntryToolResult, Source: core.SourceTool, Content: result, CallID: "c1", ToolName: "vfs_read", Preview: "result:"})
	png := l.put("\x89PNG\r\n\x1a\n", "image/png", "")
	imageSeq := l.add(core.KindToolCallCompleted, core.ToolCallCompleted{RunID: "r1", Turn: 1, CallID: "c2", Status: core.CallOK, Result: png})
	mediaSeq := l.entries(
		core.Entry{Kind: core.EntryMessage, Role: core.RoleUser, Source: core.SourceAPI, Content: png},
		core.Entry{Kind: core.EntryMessage, Role: core.RoleAssistant, Source: core.SourceModel, Content: answer},
	)
	outSeq := l.add(core.KindRunCompleted, core.RunCompleted{RunID: "r1", Output: &answer})
	failSeq := l.add(core.KindRunFailed, core.RunFailed{RunID: "r2", Error: core.Failure{Kind: "turn_limit", Message: "too many turns"}})
	reqSeq := l.add(core.KindCompactionRequested, core.CompactionRequested{CompactionID: "cmp1", Trigger: core.TriggerManual, EntryIDs: []string{"e2", "e3", "e4"}, EstimatedTokens: 900})
	summary := l.put("summary: "+long, content.MediaText, "")
	compSeq := l.add(core.KindContextCompacted, core.ContextCompacted{CompactionID: "cmp1", Trigger: core.TriggerManual, Removed: []string{"e2", "e3", "e4"},
		Entries: []core.Entry{{ID: "e9", Kind: core.EntrySummary, Source: core.SourceRuntime, Content: summary}}})
	turnSeq := l.add(core.KindTurnStarted, core.TurnStarted{RunID: "r3", Turn: 1})

	page := read(t, l.log, l.blobs, view.TranscriptQuery{})
	bySeq := map[int64]*view.Display{}
	for _, ev := range page.Events {
		bySeq[ev.Seq] = ev.Display
	}
	wantText := func(name string, c view.Content, want string) {
		t.Helper()
		if c.Text == nil || *c.Text != want || c.Preview != "" {
			t.Errorf("%s: text %v preview %q, want the full text (%d bytes)", name, c.Text, c.Preview, len(want))
		}
	}
	wantPreview := func(name string, c view.Content, ref content.ContentRef, prefix string) {
		t.Helper()
		if c.Text != nil || len(c.Preview) > core.MaxPreviewBytes || !strings.HasPrefix(c.Preview, prefix) || !strings.HasSuffix(c.Preview, "…") {
			t.Errorf("%s: text %v, preview (%d bytes) %q, want a bounded preview starting %q", name, c.Text, len(c.Preview), c.Preview, prefix)
		}
		if c.Ref != ref {
			t.Errorf("%s: ref %+v, want %+v", name, c.Ref, ref)
		}
	}

	instrEntry := bySeq[2].Entries[0]
	if bySeq[2].Kind != view.DisplayEntries || instrEntry.Key != "instructions.main" || instrEntry.EntryID != "e1" {
		t.Fatalf("instructions display %+v", bySeq[2])
	}
	wantPreview("instructions", instrEntry.Content, instr, "be brief. word")
	if d := bySeq[3]; d.Kind != view.DisplayInput || d.RunID != "r1" || len(d.Input) != 1 {
		t.Fatalf("run input display %+v", d)
	}
	wantText("run input", bySeq[3].Input[0], "question: "+long)
	wantText("user message", bySeq[4].Entries[0].Content, "question: "+long)
	wantText("visible reasoning", bySeq[5].Entries[0].Content, "let me think "+long)
	wantPreview("tool call entry (the adapter's recorded preview)", bySeq[5].Entries[1].Content, callEntry, "vfs_read(word")
	if d := bySeq[callSeq]; d.Kind != view.DisplayToolCall || d.Name != "vfs_read" || d.CallID != "c1" {
		t.Fatalf("tool call display %+v", d)
	}
	wantPreview("tool call arguments", *bySeq[callSeq].Content, args, `{"path":"word`)
	if d := bySeq[awaitSeq]; d.Kind != view.DisplayToolAwaiting || d.Name != "vfs_read" || d.CallID != "c1" || d.RunID != "r1" {
		t.Fatalf("awaiting call display %+v", d)
	}
	if d := bySeq[askSeq]; d.Kind != view.DisplayApprovalRequested || d.Name != "vfs_read" || d.CallID != "c1" {
		t.Fatalf("approval request display %+v", d)
	}
	if d := bySeq[decideSeq]; d.Kind != view.DisplayApprovalDecided || d.Status != core.ApprovalDenied || d.Reason != "not now" {
		t.Fatalf("approval decision display %+v", d)
	}
	if d := bySeq[warnSeq]; d.Kind != view.DisplayWarning || d.Source != "mcp:docs" || d.Message != "docs was down" {
		t.Fatalf("warning display %+v", d)
	}
	if d := bySeq[resultSeq]; d.Kind != view.DisplayToolResult || d.Status != core.CallOK || d.CallID != "c1" {
		t.Fatalf("tool result display %+v", d)
	}
	wantPreview("tool result", *bySeq[resultSeq].Content, result, "result: word")
	if full, err := l.blobs.Get(bg, bySeq[resultSeq].Content.Ref.Digest); err != nil || string(full) != resultBytes {
		t.Fatalf("the tool result's ref does not read its full bytes: %v", err)
	}
	wantPreview("tool result entry", bySeq[resultSeq+1].Entries[0].Content, result, "result: word")

	for name, c := range map[string]view.Content{"media tool result": *bySeq[imageSeq].Content, "media message": bySeq[mediaSeq].Entries[0].Content} {
		if c.Text != nil || c.Preview != "" || c.Ref != png || !c.IsMedia() {
			t.Errorf("%s: %+v, want ref and media type only", name, c)
		}
		raw, _ := json.Marshal(c)
		var keys map[string]any
		_ = json.Unmarshal(raw, &keys)
		if _, ok := keys["ref"]; !ok || len(keys) != 1 {
			t.Errorf("%s encodes as %s, want only the ref object", name, raw)
		}
	}
	wantText("assistant message", bySeq[mediaSeq].Entries[1].Content, "answer: "+long)
	if d := bySeq[outSeq]; d.Kind != view.DisplayOutput || d.RunID != "r1" || d.Content == nil {
		t.Fatalf("output display %+v", d)
	}
	wantText("run output", *bySeq[outSeq].Content, "answer: "+long)
	if d := bySeq[failSeq]; d.Kind != view.DisplayFailure || d.RunID != "r2" || d.Failure == nil || d.Failure.Kind != "turn_limit" || d.Failure.Message != "too many turns" {
		t.Fatalf("failure display %+v", d)
	}
	if d := bySeq[reqSeq]; d.Kind != view.DisplayCompactionRequested || d.CompactionID != "cmp1" || d.Count != 3 || !slices.Equal(d.EntryIDs, []string{"e2", "e3", "e4"}) || d.EstimatedTokens != 900 {
		t.Fatalf("compaction request display %+v", d)
	}
	d := bySeq[compSeq]
	if d.Kind != view.DisplayCompacted || d.Count != 3 || !slices.Equal(d.RemovedEntryIDs, []string{"e2", "e3", "e4"}) || len(d.Entries) != 1 || d.Entries[0].EntryID != "e9" || d.Trigger != core.TriggerManual {
		t.Fatalf("compaction display %+v", d)
	}
	wantText("summary", d.Entries[0].Content, "summary: "+long)
	if bySeq[turnSeq] != nil || bySeq[1] != nil {
		t.Fatalf("bookkeeping events have a display: %+v %+v", bySeq[turnSeq], bySeq[1])
	}
}

// countingLog counts the range reads a view makes and the events they return.
type countingLog struct {
	store.SessionLog
	mu                  sync.Mutex
	before, after, read int
	limits              []int
}

func (c *countingLog) ReadAfter(ctx context.Context, id string, after int64, limit int) ([]core.Event, error) {
	evs, err := c.SessionLog.ReadAfter(ctx, id, after, limit)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.after++
	c.read += len(evs)
	c.limits = append(c.limits, limit)
	return evs, err
}

func (c *countingLog) ReadBefore(ctx context.Context, id string, before int64, limit int) ([]core.Event, error) {
	evs, err := c.SessionLog.ReadBefore(ctx, id, before, limit)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.before++
	c.read += len(evs)
	c.limits = append(c.limits, limit)
	return evs, err
}

// countingBlobs records every digest read.
type countingBlobs struct {
	view.BlobReader
	got []content.Digest
}

func (c *countingBlobs) Get(ctx context.Context, d content.Digest) ([]byte, error) {
	c.got = append(c.got, d)
	return c.BlobReader.Get(ctx, d)
}

func TestTranscript_ReadsOnlyItsRangeAndItsBlobs(t *testing.T) {
	l := newTLog(t)
	for i := range 40 {
		l.userMessage(fmt.Sprintf("m%d", i))
	} // seqs 1…41
	cases := []struct {
		name                string
		q                   view.TranscriptQuery
		before, after, want int
	}{
		{"latest page", view.TranscriptQuery{Limit: 5}, 1, 0, 5},
		{"older page", view.TranscriptQuery{Before: 20, Limit: 5}, 1, 0, 5},
		{"forward page", view.TranscriptQuery{After: after(30), Limit: 5}, 0, 1, 5},
	}
	for _, tc := range cases {
		cl := &countingLog{SessionLog: l.log}
		cb := &countingBlobs{BlobReader: l.blobs}
		page := read(t, cl, cb, tc.q)
		if len(page.Events) != tc.want || cl.before != tc.before || cl.after != tc.after || cl.read != tc.want || !slices.Equal(cl.limits, []int{5}) {
			t.Errorf("%s: %d events; %d ReadBefore and %d ReadAfter calls (limits %v) returned %d events; want one call returning %d",
				tc.name, len(page.Events), cl.before, cl.after, cl.limits, cl.read, tc.want)
		}
		// Only the blobs the page shows are read: one message text per event.
		var shown []content.Digest
		for _, ev := range page.Events {
			shown = append(shown, ev.Display.Entries[0].Ref.Digest)
		}
		if !slices.Equal(cb.got, shown) {
			t.Errorf("%s: read blobs %v, want exactly the page's %v", tc.name, cb.got, shown)
		}
	}
}

// A refusal-only answer shows its refusal text marked as a refusal, both as
// the assistant message and as the run's output; other text is not marked.
func TestTranscript_MarksRefusals(t *testing.T) {
	l := newTLog(t)
	refusal := l.put(`{"role":"assistant","refusal":"I'm sorry, I cannot assist with that request."}`, content.MediaJSON, chat.ProviderKindMessage)
	plain := l.put(`{"role":"assistant","content":"Sure."}`, content.MediaJSON, chat.ProviderKindMessage)
	entrySeq := l.entries(
		core.Entry{Kind: core.EntryMessage, Role: core.RoleAssistant, Source: core.SourceModel, Content: refusal},
		core.Entry{Kind: core.EntryMessage, Role: core.RoleAssistant, Source: core.SourceModel, Content: plain},
	)
	outSeq := l.add(core.KindRunCompleted, core.RunCompleted{RunID: "r1", Output: &refusal})
	page := read(t, l.log, l.blobs, view.TranscriptQuery{})
	bySeq := map[int64]*view.Display{}
	for _, ev := range page.Events {
		bySeq[ev.Seq] = ev.Display
	}
	const want = "I'm sorry, I cannot assist with that request."
	for name, c := range map[string]view.Content{"entry": bySeq[entrySeq].Entries[0].Content, "output": *bySeq[outSeq].Content} {
		if c.Text == nil || *c.Text != want || !c.Refusal {
			t.Errorf("%s: %+v", name, c)
		}
	}
	if c := bySeq[entrySeq].Entries[1].Content; c.Refusal || c.Text == nil || *c.Text != "Sure." {
		t.Errorf("plain answer: %+v", c)
	}
	raw, err := json.Marshal(bySeq[outSeq].Content)
	if err != nil || !strings.Contains(string(raw), `"refusal":true`) {
		t.Fatalf("output JSON %s, %v", raw, err)
	}
}

// droppingLog loses the event at seq drop from every range read.
type droppingLog struct {
	store.SessionLog
	drop int64
}

func (d droppingLog) without(evs []core.Event, err error) ([]core.Event, error) {
	return slices.DeleteFunc(evs, func(ev core.Event) bool { return ev.Seq == d.drop }), err
}

func (d droppingLog) ReadAfter(ctx context.Context, id string, after int64, limit int) ([]core.Event, error) {
	return d.without(d.SessionLog.ReadAfter(ctx, id, after, limit))
}

func (d droppingLog) ReadBefore(ctx context.Context, id string, before int64, limit int) ([]core.Event, error) {
	return d.without(d.SessionLog.ReadBefore(ctx, id, before, limit))
}

// A page whose range lacks an event fails with a typed history_incomplete
// error naming the first missing seq, as session/read does, instead of
// returning the events around the hole; a page whose range is whole is
// unaffected by a hole elsewhere.
func TestTranscript_MissingEventsAreHistoryIncomplete(t *testing.T) {
	l := newTLog(t)
	for i := range 9 {
		l.userMessage(fmt.Sprintf("m%d", i))
	} // seqs 1…10
	cases := []struct {
		name    string
		q       view.TranscriptQuery
		drop    int64
		missing int64 // 0: the page reads fine
	}{
		{"latest page, its head", view.TranscriptQuery{Limit: 3}, 10, 10},
		{"latest page, inside", view.TranscriptQuery{Limit: 3}, 9, 9},
		{"latest page, its lowest seq", view.TranscriptQuery{Limit: 3}, 8, 8},
		{"whole session, seq 1", view.TranscriptQuery{Limit: 20}, 1, 1},
		{"latest page, a hole below it", view.TranscriptQuery{Limit: 3}, 2, 0},
		{"older page, its top", view.TranscriptQuery{Before: 6, Limit: 3}, 5, 5},
		{"older page, its lowest seq", view.TranscriptQuery{Before: 6, Limit: 3}, 3, 3},
		{"older page, a hole above it", view.TranscriptQuery{Before: 6, Limit: 3}, 9, 0},
		{"cursor past the head, the head", view.TranscriptQuery{Before: 50, Limit: 3}, 10, 10},
		{"forward page, its first seq", view.TranscriptQuery{After: after(0), Limit: 3}, 1, 1},
		{"forward page, inside", view.TranscriptQuery{After: after(5), Limit: 3}, 7, 7},
		{"forward page short of the head", view.TranscriptQuery{After: after(5), Limit: 10}, 10, 10},
		{"forward page, a hole before it", view.TranscriptQuery{After: after(5), Limit: 10}, 3, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page, err := view.ReadTranscript(bg, droppingLog{l.log, c.drop}, l.blobs, "s1", c.q)
			if c.missing == 0 {
				if err != nil || len(page.Events) == 0 {
					t.Fatalf("%d events, %v; want the whole page", len(page.Events), err)
				}
				return
			}
			var hi *runtime.HistoryIncompleteError
			if !errors.As(err, &hi) || !errors.Is(err, runtime.ErrHistoryIncomplete) || hi.Missing != c.missing {
				t.Fatalf("page of seqs %v, err = %v; want history incomplete at seq %d", seqs(page), err, c.missing)
			}
		})
	}
}
