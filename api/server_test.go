package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/store"
)

var bg = context.Background()

func TestCreateSessionWithIDInstructionsAndTools(t *testing.T) {
	e := newEnv(t)
	got, err := e.c.CreateSession(bg, api.CreateSessionParams{
		SessionID: "alpha", Model: testModel(), Instructions: "Be brief.", Tools: []string{"lookup", "search"}, MaxTurns: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.SessionID != "alpha" {
		t.Fatalf("sessionId %q, want alpha", got.SessionID)
	}
	s := e.read(t, "alpha")
	if s.SessionID != "alpha" || s.Status != core.SessionStatusOpen || s.Model != testModel() ||
		!slices.Equal(s.Tools, []string{"lookup", "search"}) || s.ActiveRun != nil || len(s.QueuedRuns) != 0 {
		t.Fatalf("session/read = %+v", s)
	}
	// session.opened, then the instructions entry: two events, revision 1.
	if s.Head != 2 || s.ContextRevision != 1 {
		t.Fatalf("head %d revision %d, want 2 and 1", s.Head, s.ContextRevision)
	}
	cx := e.context(t, "alpha")
	if cx.Revision != 1 || len(cx.Entries) != 1 {
		t.Fatalf("context = %+v", cx)
	}
	in := cx.Entries[0]
	if in.Kind != core.EntryInstructions || in.Key != "instructions.main" || in.Preview != "Be brief." {
		t.Fatalf("instructions entry = %+v", in)
	}
	data, err := e.c.ReadBlob(bg, api.BlobReadParams{Ref: api.DigestRef(in.Content.Digest)})
	if err != nil || string(data.Data) != "Be brief." {
		t.Fatalf("instructions blob = %q, %v", data.Data, err)
	}
	evs := e.events(t, "alpha")
	var opened core.SessionOpened
	if err := json.Unmarshal(evs[0].Payload, &opened); err != nil || evs[0].Kind != core.KindSessionOpened {
		t.Fatalf("first event %s: %s", evs[0].Kind, evs[0].Payload)
	}
	if opened.Config.MaxTurns != 3 || !slices.Equal(opened.Config.Tools, []string{"lookup", "search"}) {
		t.Fatalf("session.opened config = %+v", opened.Config)
	}
}

func TestCreateSessionWithoutIDInstructionsOrTools(t *testing.T) {
	e := newEnv(t)
	a := e.create(t, api.CreateSessionParams{})
	b := e.create(t, api.CreateSessionParams{})
	if !strings.HasPrefix(a, "s_") || a == b {
		t.Fatalf("generated ids %q and %q: want distinct s_… ids", a, b)
	}
	s := e.read(t, a)
	if s.Head != 1 || s.ContextRevision != 0 || len(s.Tools) != 0 || s.Status != core.SessionStatusOpen {
		t.Fatalf("session/read = %+v", s)
	}
	if cx := e.context(t, a); cx.Revision != 0 || len(cx.Entries) != 0 {
		t.Fatalf("context = %+v", cx)
	}
}

func TestCreateSessionRejections(t *testing.T) {
	e := newEnv(t)
	e.create(t, api.CreateSessionParams{SessionID: "taken", Instructions: "keep me"})
	cases := []struct {
		name string
		p    api.CreateSessionParams
		kind string
	}{
		{"existing id", api.CreateSessionParams{SessionID: "taken", Model: testModel(), Instructions: "replace you"}, core.RejectSessionExists},
		{"kind without an adapter", api.CreateSessionParams{SessionID: "n1", Model: core.ModelSelection{ProviderID: "x", APIKind: core.APIAnthropicMessages, Model: "m"}}, core.RejectInvalidConfiguration},
		{"unknown kind", api.CreateSessionParams{SessionID: "n2", Model: core.ModelSelection{ProviderID: "x", APIKind: "carrier_pigeon", Model: "m"}}, core.RejectInvalidConfiguration},
		{"no model", api.CreateSessionParams{SessionID: "n3", Model: core.ModelSelection{ProviderID: "x", APIKind: core.APIChatCompletions}}, core.RejectInvalidConfiguration},
		{"tool granted twice", api.CreateSessionParams{SessionID: "n4", Model: testModel(), Tools: []string{"a", "a"}}, core.RejectInvalidConfiguration},
		{"bad id", api.CreateSessionParams{SessionID: "has space", Model: testModel()}, core.RejectInvalidInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.rejected(t, "taken", tc.kind, func() error { _, err := e.c.CreateSession(bg, tc.p); return err })
			list, err := e.c.ListSessions(bg, api.SessionListParams{})
			if err != nil || len(list.Sessions) != 1 || list.Sessions[0].SessionID != "taken" {
				t.Fatalf("sessions after a rejected create: %+v, %v", list.Sessions, err)
			}
		})
	}
	if cx := e.context(t, "taken"); cx.Entries[0].Preview != "keep me" {
		t.Fatalf("instructions of the existing session changed: %+v", cx.Entries)
	}
}

func TestSessionList(t *testing.T) {
	e := newEnv(t)
	// An empty server lists an empty array, not null.
	var raw struct {
		Sessions json.RawMessage `json:"sessions"`
	}
	if err := e.c.Call(bg, api.MethodSessionList, api.SessionListParams{}, &raw); err != nil || string(raw.Sessions) != "[]" {
		t.Fatalf("empty list: %s, %v", raw.Sessions, err)
	}
	for _, id := range []string{"list-b", "list-a", "list-c"} {
		e.create(t, api.CreateSessionParams{SessionID: id})
	}
	run := e.start(t, "list-a", "hi")
	e.waitStatus(t, "list-a", run.RunID, core.StatusCompleted)

	all, err := e.c.ListSessions(bg, api.SessionListParams{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range all.Sessions {
		ids = append(ids, s.SessionID)
		if s.Status != core.SessionStatusOpen || s.Model != testModel() || s.Head < 1 {
			t.Fatalf("listed session = %+v", s)
		}
	}
	// Newest first: list-c was created last.
	if len(ids) != 3 || ids[0] != "list-c" || !slices.IsSortedFunc(all.Sessions, store.NewestFirst) {
		t.Fatalf("sessions %v, want all three newest first", ids)
	}
	a := all.Sessions[slices.Index(ids, "list-a")]
	if a.LastRunID != run.RunID || a.LastRunStatus != core.StatusCompleted || a.ActiveRunID != "" || a.Head != e.read(t, "list-a").Head {
		t.Fatalf("list-a after its run = %+v", a)
	}

	page, err := e.c.ListSessions(bg, api.SessionListParams{After: "list-a", Limit: 1})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].SessionID != "list-b" {
		t.Fatalf("after list-a, limit 1: %+v, %v", page.Sessions, err)
	}
	page, err = e.c.ListSessions(bg, api.SessionListParams{After: "list-c"})
	if err != nil || len(page.Sessions) != 0 {
		t.Fatalf("after the last session: %+v, %v", page.Sessions, err)
	}
}

func TestRunStartAndReadOutput(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{Instructions: "Echo."})
	run := e.start(t, sid, "hello there")
	if !strings.HasPrefix(run.RunID, "run_") || run.Status != core.StatusRunning {
		t.Fatalf("runs/start = %+v", run)
	}
	got := e.waitStatus(t, sid, run.RunID, core.StatusCompleted)
	if got.RunID != run.RunID || got.Turns != 1 || got.Error != nil || got.Output == nil {
		t.Fatalf("runs/read = %+v", got)
	}
	out := got.Output
	if out.VisibleText() != "echo: hello there" || out.Ref.MediaType != content.MediaJSON || out.Ref.ProviderKind != chat.ProviderKindMessage {
		t.Fatalf("output = %+v", out)
	}
	// The ref names the stored native message, and the text is its projection.
	native, err := e.c.ReadBlob(bg, api.BlobReadParams{Ref: api.RefOf(out.Ref)})
	if err != nil {
		t.Fatal(err)
	}
	if content.Sum(native.Data) != out.Ref.Digest || !bytes.Contains(native.Data, []byte(`"content":"echo: hello there"`)) {
		t.Fatalf("output blob %s = %s", out.Ref, native.Data)
	}
	// The model saw the instructions first, then the user's message.
	req := e.model.request(0)
	if len(req.Entries) != 2 || req.Entries[0].Kind != core.EntryInstructions || req.Entries[1].Preview != "hello there" || req.SessionID != sid {
		t.Fatalf("model request = %+v", req)
	}
	s := e.read(t, sid)
	if s.ActiveRun != nil || len(s.QueuedRuns) != 0 {
		t.Fatalf("session after the run = %+v", s)
	}

	e.rejected(t, sid, core.RejectUnknownReference, func() error { _, err := e.c.ReadRun(bg, sid, "run_missing"); return err })
	e.rejected(t, sid, api.KindInvalidParams, func() error {
		_, err := e.c.StartRun(bg, api.RunStartParams{SessionID: sid, Input: []api.InputPart{{Type: "image", Text: "x"}}})
		return err
	})
	e.rejected(t, sid, api.KindInvalidParams, func() error {
		_, err := e.c.StartRun(bg, api.RunStartParams{SessionID: sid, Input: []api.InputPart{{Type: "text"}}})
		return err
	})
	e.rejected(t, sid, api.KindInvalidParams, func() error {
		_, err := e.c.StartRun(bg, api.RunStartParams{SessionID: sid})
		return err
	})
}

func TestRunStartSubmissionIDIsIdempotent(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{})
	first, err := e.c.StartRun(bg, api.RunStartParams{SessionID: sid, Input: textInput("once"), SubmissionID: "sub-1"})
	if err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, sid, first.RunID, core.StatusCompleted)
	var again api.RunStartResult
	e.unchanged(t, sid, func() {
		again, err = e.c.StartRun(bg, api.RunStartParams{SessionID: sid, Input: textInput("once"), SubmissionID: "sub-1"})
		if err != nil {
			t.Fatal(err)
		}
	})
	if again.RunID != first.RunID || again.Status != core.StatusCompleted {
		t.Fatalf("retried submission = %+v, want run %s completed", again, first.RunID)
	}
	e.rejected(t, sid, core.RejectDuplicateSubmission, func() error {
		_, err := e.c.StartRun(bg, api.RunStartParams{SessionID: sid, Input: textInput("different"), SubmissionID: "sub-1"})
		return err
	})
	if n := e.model.calls(); n != 1 {
		t.Fatalf("%d model calls, want 1", n)
	}
}

// unchanged runs fn and checks that the session is exactly as before.
func (e *env) unchanged(t *testing.T, sessionID string, fn func()) {
	t.Helper()
	before := e.snapshot(t, sessionID)
	fn()
	if after := e.snapshot(t, sessionID); !reflect.DeepEqual(before, after) {
		t.Fatalf("the session changed:\nbefore %+v\nafter  %+v", before, after)
	}
}

func TestSessionReadShowsActiveAndQueuedRuns(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{})
	e.model.setHold(true)
	first := e.start(t, sid, "first")
	e.model.waitArrived(t, 0)
	second := e.start(t, sid, "second")
	if first.Status != core.StatusRunning || second.Status != core.StatusQueued {
		t.Fatalf("statuses %s and %s, want running and queued", first.Status, second.Status)
	}
	s := e.read(t, sid)
	if s.ActiveRun == nil || *s.ActiveRun != (api.RunSummary{RunID: first.RunID, Status: core.StatusRunning}) {
		t.Fatalf("activeRun = %+v, want %s running", s.ActiveRun, first.RunID)
	}
	if !slices.Equal(s.QueuedRuns, []api.RunSummary{{RunID: second.RunID, Status: core.StatusQueued}}) {
		t.Fatalf("queuedRuns = %+v, want [%s queued]", s.QueuedRuns, second.RunID)
	}
	if r, err := e.c.ReadRun(bg, sid, second.RunID); err != nil || r.Status != core.StatusQueued || r.Output != nil || r.Turns != 0 {
		t.Fatalf("queued run = %+v, %v", r, err)
	}
	if r, err := e.c.ReadRun(bg, sid, first.RunID); err != nil || r.Status != core.StatusRunning || r.Output != nil || r.Turns != 1 {
		t.Fatalf("active run = %+v, %v", r, err)
	}

	e.model.setHold(false)
	e.model.releaseOne(t)
	e.waitStatus(t, sid, first.RunID, core.StatusCompleted)
	got := e.waitStatus(t, sid, second.RunID, core.StatusCompleted)
	if got.Output == nil || got.Output.VisibleText() != "echo: second" {
		t.Fatalf("second run = %+v", got)
	}
	s = e.read(t, sid)
	if s.ActiveRun != nil || len(s.QueuedRuns) != 0 {
		t.Fatalf("session after both runs = %+v", s)
	}
	// queuedRuns is an empty array, not null, and activeRun is absent.
	var raw map[string]json.RawMessage
	if err := e.c.Call(bg, api.MethodSessionRead, api.SessionParams{SessionID: sid}, &raw); err != nil {
		t.Fatal(err)
	}
	if string(raw["queuedRuns"]) != "[]" || raw["activeRun"] != nil {
		t.Fatalf("idle session/read: queuedRuns %s, activeRun %s", raw["queuedRuns"], raw["activeRun"])
	}
}

func TestSteer(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{})
	e.rejected(t, sid, core.RejectNoActiveRun, func() error {
		_, err := e.c.Steer(bg, api.SteerParams{SessionID: sid, Input: textInput("nobody listens")})
		return err
	})

	e.model.setHold(true)
	run := e.start(t, sid, "draft it")
	e.model.waitArrived(t, 0)
	st, err := e.c.Steer(bg, api.SteerParams{SessionID: sid, Input: textInput("shorter, please")})
	if err != nil {
		t.Fatal(err)
	}
	if st.RunID != run.RunID || !strings.HasPrefix(st.SteeringID, "st_") {
		t.Fatalf("steer = %+v", st)
	}
	// Durable at once, but not in context until the next turn boundary.
	evs := e.events(t, sid)
	last := evs[len(evs)-1]
	var accepted core.RunSteeringAccepted
	if last.Kind != core.KindRunSteeringAccepted || json.Unmarshal(last.Payload, &accepted) != nil ||
		accepted.SteeringID != st.SteeringID || accepted.RunID != run.RunID {
		t.Fatalf("last event %s %s, want the steering", last.Kind, last.Payload)
	}
	for _, en := range e.context(t, sid).Entries {
		if en.Preview == "shorter, please" {
			t.Fatal("steering entered context before the turn boundary")
		}
	}
	e.rejected(t, sid, api.KindInvalidParams, func() error {
		_, err := e.c.Steer(bg, api.SteerParams{SessionID: sid})
		return err
	})

	// The run takes another turn for the steering instead of completing.
	e.model.setHold(false)
	e.model.releaseOne(t)
	got := e.waitStatus(t, sid, run.RunID, core.StatusCompleted)
	if got.Turns != 2 || got.Output == nil || got.Output.VisibleText() != "echo: shorter, please" {
		t.Fatalf("steered run = %+v", got)
	}
	second := e.model.request(1).Entries
	if n := len(second); n != 3 || second[0].Preview != "draft it" || second[1].Role != core.RoleAssistant || second[2].Preview != "shorter, please" {
		t.Fatalf("second request entries = %+v", second)
	}
	e.rejected(t, sid, core.RejectNoActiveRun, func() error {
		_, err := e.c.Steer(bg, api.SteerParams{SessionID: sid, Input: textInput("too late")})
		return err
	})
}

func TestCancelHeldRun(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{})
	e.model.setHold(true)
	run := e.start(t, sid, "take your time")
	e.model.waitArrived(t, 0)

	got, err := e.c.CancelRun(bg, sid, run.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if got != (api.RunSummary{RunID: run.RunID, Status: core.StatusCancelled}) {
		t.Fatalf("runs/cancel = %+v", got)
	}
	// The model call in flight is cancelled, not answered.
	select {
	case <-e.model.cancelled:
	case <-time.After(waitLimit):
		t.Fatal("the held model call was not cancelled")
	}
	r, err := e.c.ReadRun(bg, sid, run.RunID)
	if err != nil || r.Status != core.StatusCancelled || r.Output != nil {
		t.Fatalf("runs/read after cancel = %+v, %v", r, err)
	}
	s := e.read(t, sid)
	if s.ActiveRun != nil || len(s.QueuedRuns) != 0 {
		t.Fatalf("session after cancel = %+v", s)
	}
	evs := e.events(t, sid)
	var kinds []string
	for _, ev := range evs[len(evs)-3:] {
		kinds = append(kinds, ev.Kind)
	}
	if !slices.Equal(kinds, []string{core.KindRunCancelRequested, core.KindTurnCompleted, core.KindRunCancelled}) {
		t.Fatalf("last events %v", kinds)
	}
	// Cancelling again is a no-op that reports the status.
	e.unchanged(t, sid, func() {
		again, err := e.c.CancelRun(bg, sid, run.RunID)
		if err != nil || again.Status != core.StatusCancelled {
			t.Fatalf("second cancel = %+v, %v", again, err)
		}
	})
	e.rejected(t, sid, core.RejectUnknownReference, func() error { _, err := e.c.CancelRun(bg, sid, "run_missing"); return err })
	e.rejected(t, sid, api.KindInvalidParams, func() error { _, err := e.c.CancelRun(bg, sid, ""); return err })
	if n := e.model.calls(); n != 1 {
		t.Fatalf("%d model calls, want 1 (no extra turn after cancel)", n)
	}
}

func TestCancelQueuedRun(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{})
	e.model.setHold(true)
	first := e.start(t, sid, "first")
	e.model.waitArrived(t, 0)
	second := e.start(t, sid, "second")
	got, err := e.c.CancelRun(bg, sid, second.RunID)
	if err != nil || got.Status != core.StatusCancelled {
		t.Fatalf("cancel queued = %+v, %v", got, err)
	}
	s := e.read(t, sid)
	if s.ActiveRun == nil || s.ActiveRun.RunID != first.RunID || len(s.QueuedRuns) != 0 {
		t.Fatalf("session after cancelling the queued run = %+v", s)
	}
	e.model.setHold(false)
	e.model.releaseOne(t)
	e.waitStatus(t, sid, first.RunID, core.StatusCompleted)
	if r, _ := e.c.ReadRun(bg, sid, second.RunID); r.Status != core.StatusCancelled {
		t.Fatalf("cancelled queued run is %s", r.Status)
	}
	if n := e.model.calls(); n != 1 {
		t.Fatalf("%d model calls, want 1: the cancelled run must never start", n)
	}
}

func TestEventsReadPaging(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{Instructions: "Echo."})
	run := e.start(t, sid, "page me")
	e.waitStatus(t, sid, run.RunID, core.StatusCompleted)
	head := e.read(t, sid).Head
	all := e.events(t, sid)
	if int64(len(all)) != head || head < 8 {
		t.Fatalf("%d events with head %d", len(all), head)
	}
	for i, ev := range all {
		if ev.Seq != int64(i+1) || ev.Kind == "" || !json.Valid(ev.Payload) || ev.ObservedAtMs <= 0 {
			t.Fatalf("event %d = %+v", i+1, ev)
		}
	}
	if all[0].Kind != core.KindSessionOpened || all[len(all)-1].Kind != core.KindRunCompleted {
		t.Fatalf("first %s, last %s", all[0].Kind, all[len(all)-1].Kind)
	}
	for _, ev := range all {
		if ev.Kind == core.KindRunAccepted && !slices.Contains(ev.Joins, "run:"+run.RunID) {
			t.Fatalf("run.accepted joins %v", ev.Joins)
		}
	}

	var paged []api.EventView
	var after int64
	for pages := 0; ; pages++ {
		if pages > int(head) {
			t.Fatal("paging does not end")
		}
		page, err := e.c.ReadEvents(bg, api.EventsReadParams{SessionID: sid, After: after, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if page.Head != head || len(page.Events) > 3 {
			t.Fatalf("page after %d: %d events, head %d", after, len(page.Events), page.Head)
		}
		if len(page.Events) == 0 {
			break
		}
		if page.Events[0].Seq != after+1 {
			t.Fatalf("page after %d starts at %d", after, page.Events[0].Seq)
		}
		paged = append(paged, page.Events...)
		after = page.Events[len(page.Events)-1].Seq
	}
	ja, _ := json.Marshal(all)
	jp, _ := json.Marshal(paged)
	if !bytes.Equal(ja, jp) {
		t.Fatal("paged events differ from the whole log")
	}
	// The default limit applies when none is given; reading past the head is empty.
	if page, err := e.c.ReadEvents(bg, api.EventsReadParams{SessionID: sid, After: head - 2}); err != nil || len(page.Events) != 2 {
		t.Fatalf("last two: %+v, %v", page, err)
	}
	var raw struct {
		Events json.RawMessage `json:"events"`
		Head   int64           `json:"head"`
	}
	if err := e.c.Call(bg, api.MethodEventsRead, api.EventsReadParams{SessionID: sid, After: head + 10}, &raw); err != nil || string(raw.Events) != "[]" || raw.Head != head {
		t.Fatalf("past the head: %s head %d, %v", raw.Events, raw.Head, err)
	}
	e.rejected(t, sid, api.KindInvalidParams, func() error {
		_, err := e.c.ReadEvents(bg, api.EventsReadParams{SessionID: sid, After: -1})
		return err
	})
	e.rejected(t, sid, api.KindInvalidParams, func() error {
		_, err := e.c.ReadEvents(bg, api.EventsReadParams{SessionID: sid, Limit: -1})
		return err
	})
}

// drainChanged forgets earlier Changed calls.
func (e *env) drainChanged() {
	for {
		select {
		case <-e.changed:
		default:
			return
		}
	}
}

func (e *env) waitChanged(t *testing.T, sessionID string) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case id := <-e.changed:
			if id == sessionID {
				return
			}
		case <-deadline:
			t.Fatal("the long poll never reached the host")
		}
	}
}

type pollResult struct {
	page    api.EventsReadResult
	err     error
	elapsed time.Duration
}

// longPoll starts session/events/read in a goroutine and returns once the
// server has taken the session's head (and the channel it will wait on).
func (e *env) longPoll(t *testing.T, p api.EventsReadParams) <-chan pollResult {
	t.Helper()
	e.drainChanged()
	done := make(chan pollResult, 1)
	go func() {
		start := time.Now()
		page, err := e.c.ReadEvents(bg, p)
		done <- pollResult{page, err, time.Since(start)}
	}()
	e.waitChanged(t, p.SessionID)
	return done
}

func awaitPoll(t *testing.T, done <-chan pollResult) pollResult {
	t.Helper()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("long poll: %v", r.err)
		}
		return r
	case <-time.After(waitLimit):
		t.Fatal("long poll did not return")
	}
	panic("unreachable")
}

func TestEventsLongPollReturnsWhenAnEventCommits(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{})
	head := e.read(t, sid).Head
	const wait = 20_000 // ms; the test fails long before a poll could time out
	done := e.longPoll(t, api.EventsReadParams{SessionID: sid, After: head, WaitMs: wait})
	select {
	case r := <-done:
		t.Fatalf("long poll returned before anything happened: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
	added, err := e.c.AppendContext(bg, api.ContextAppendParams{SessionID: sid, Kind: core.EntryMessage, Text: "wake up"})
	if err != nil {
		t.Fatal(err)
	}
	r := awaitPoll(t, done)
	if r.elapsed >= wait*time.Millisecond/2 {
		t.Fatalf("long poll took %v", r.elapsed)
	}
	if len(r.page.Events) != 1 || r.page.Events[0].Seq != head+1 || r.page.Events[0].Kind != core.KindContextEntriesApplied || r.page.Head != head+1 {
		t.Fatalf("long poll = %+v", r.page)
	}
	if !bytes.Contains(r.page.Events[0].Payload, []byte(added.EntryID)) {
		t.Fatalf("event payload %s lacks entry %s", r.page.Events[0].Payload, added.EntryID)
	}
}

func TestEventsLongPollTimesOutEmpty(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{})
	head := e.read(t, sid).Head
	done := e.longPoll(t, api.EventsReadParams{SessionID: sid, After: head, WaitMs: 250})
	r := awaitPoll(t, done)
	if len(r.page.Events) != 0 || r.page.Head != head {
		t.Fatalf("timed-out poll = %+v, want no events and head %d", r.page, head)
	}
	if r.elapsed < 250*time.Millisecond {
		t.Fatalf("poll returned after %v, before its waitMs", r.elapsed)
	}
	if r.elapsed > 5*time.Second {
		t.Fatalf("poll returned after %v, long after its waitMs", r.elapsed)
	}
	// Events already past `after` are returned at once, without waiting.
	start := time.Now()
	page, err := e.c.ReadEvents(bg, api.EventsReadParams{SessionID: sid, After: 0, WaitMs: 20_000})
	if err != nil || len(page.Events) != int(head) || time.Since(start) > 5*time.Second {
		t.Fatalf("poll with events available: %+v, %v after %v", page, err, time.Since(start))
	}
}

// A long poll woken by an append of several events, reading fewer than were
// appended, still reports the session's head, so a client knows there is more.
func TestEventsLongPollReportsCurrentHead(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{})
	e.model.setHold(true)
	run := e.start(t, sid, "hold")
	e.model.waitArrived(t, 0)
	head := e.read(t, sid).Head
	done := e.longPoll(t, api.EventsReadParams{SessionID: sid, After: head, Limit: 1, WaitMs: 20_000})
	if _, err := e.c.CancelRun(bg, sid, run.RunID); err != nil { // one append of three events
		t.Fatal(err)
	}
	r := awaitPoll(t, done)
	now := e.read(t, sid).Head
	if now != head+3 {
		t.Fatalf("head after cancel %d, want %d", now, head+3)
	}
	if len(r.page.Events) != 1 || r.page.Events[0].Seq != head+1 || r.page.Head != now {
		t.Fatalf("long poll = %+v; want one event, seq %d, and head %d", r.page, head+1, now)
	}
}

func TestContextAppendRemoveAndRevisions(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{Instructions: "Be kind."})
	rev := int64(1)
	msg, err := e.c.AppendContext(bg, api.ContextAppendParams{SessionID: sid, Kind: core.EntryMessage, Text: "remember this", ExpectedRevision: &rev})
	if err != nil {
		t.Fatal(err)
	}
	if msg.Revision != 2 || msg.EntryID == "" {
		t.Fatalf("append message = %+v", msg)
	}
	style, err := e.c.AppendContext(bg, api.ContextAppendParams{SessionID: sid, Kind: core.EntryInstructions, Key: "instructions.style", Text: "Use British spelling."})
	if err != nil {
		t.Fatal(err)
	}
	if style.Revision != 3 || style.EntryID == msg.EntryID {
		t.Fatalf("append instructions = %+v", style)
	}
	cx := e.context(t, sid)
	var order []string
	for _, en := range cx.Entries {
		order = append(order, en.Kind+"|"+en.Key+"|"+en.Preview)
	}
	want := []string{"instructions|instructions.main|Be kind.", "instructions|instructions.style|Use British spelling.", "message||remember this"}
	if cx.Revision != 3 || !slices.Equal(order, want) {
		t.Fatalf("context revision %d %q, want 3 %q", cx.Revision, order, want)
	}
	if m := cx.Entries[2]; m.ID != msg.EntryID || m.Role != core.RoleUser || m.Source != core.SourceAPI {
		t.Fatalf("appended message entry = %+v", m)
	}
	if s := e.read(t, sid); s.ContextRevision != 3 {
		t.Fatalf("session/read contextRevision %d", s.ContextRevision)
	}

	stale := int64(1)
	conflict := e.rejected(t, sid, core.RejectRevisionConflict, func() error {
		_, err := e.c.AppendContext(bg, api.ContextAppendParams{SessionID: sid, Kind: core.EntryMessage, Text: "late", ExpectedRevision: &stale})
		return err
	})
	if conflict.Code != api.CodeDomain || conflict.Data.Expected == nil || *conflict.Data.Expected != 1 || conflict.Data.Actual == nil || *conflict.Data.Actual != 3 {
		t.Fatalf("append conflict = %+v %+v", conflict, conflict.Data)
	}
	stale = 2
	conflict = e.rejected(t, sid, core.RejectRevisionConflict, func() error {
		_, err := e.c.RemoveContext(bg, api.ContextRemoveParams{SessionID: sid, Key: "instructions.style", ExpectedRevision: &stale})
		return err
	})
	if conflict.Data.Expected == nil || *conflict.Data.Expected != 2 || conflict.Data.Actual == nil || *conflict.Data.Actual != 3 {
		t.Fatalf("remove conflict data = %+v", conflict.Data)
	}

	rev = 3
	removed, err := e.c.RemoveContext(bg, api.ContextRemoveParams{SessionID: sid, Key: "instructions.style", ExpectedRevision: &rev})
	if err != nil || removed.Revision != 4 {
		t.Fatalf("remove = %+v, %v", removed, err)
	}
	cx = e.context(t, sid)
	if cx.Revision != 4 || len(cx.Entries) != 2 || cx.Entries[0].Key != "instructions.main" || cx.Entries[1].ID != msg.EntryID {
		t.Fatalf("context after remove = %+v", cx)
	}

	for _, tc := range []struct {
		name string
		kind string
		call func() error
	}{
		{"removed key", core.RejectUnknownReference, func() error {
			_, err := e.c.RemoveContext(bg, api.ContextRemoveParams{SessionID: sid, Key: "instructions.style"})
			return err
		}},
		{"no key", api.KindInvalidParams, func() error {
			_, err := e.c.RemoveContext(bg, api.ContextRemoveParams{SessionID: sid})
			return err
		}},
		{"kind not appendable", core.RejectInvalidInput, func() error {
			_, err := e.c.AppendContext(bg, api.ContextAppendParams{SessionID: sid, Kind: core.EntryToolResult, Text: "x"})
			return err
		}},
		{"instructions outside the namespace", core.RejectInvalidInput, func() error {
			_, err := e.c.AppendContext(bg, api.ContextAppendParams{SessionID: sid, Kind: core.EntryInstructions, Key: "style", Text: "x"})
			return err
		}},
		{"instructions without key", core.RejectInvalidInput, func() error {
			_, err := e.c.AppendContext(bg, api.ContextAppendParams{SessionID: sid, Kind: core.EntryInstructions, Text: "x"})
			return err
		}},
		{"empty text", api.KindInvalidParams, func() error {
			_, err := e.c.AppendContext(bg, api.ContextAppendParams{SessionID: sid, Kind: core.EntryMessage})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { e.rejected(t, sid, tc.kind, tc.call) })
	}
}

func TestContextChangesRejectedWhileARunIsActive(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{Instructions: "Be kind."})
	e.model.setHold(true)
	run := e.start(t, sid, "busy")
	e.model.waitArrived(t, 0)
	e.rejected(t, sid, core.RejectActiveWork, func() error {
		_, err := e.c.AppendContext(bg, api.ContextAppendParams{SessionID: sid, Kind: core.EntryMessage, Text: "meanwhile"})
		return err
	})
	e.rejected(t, sid, core.RejectActiveWork, func() error {
		_, err := e.c.RemoveContext(bg, api.ContextRemoveParams{SessionID: sid, Key: "instructions.main"})
		return err
	})
	// Reading is fine while the run is active.
	if cx := e.context(t, sid); len(cx.Entries) != 2 {
		t.Fatalf("context during the run = %+v", cx)
	}
	e.model.setHold(false)
	e.model.releaseOne(t)
	e.waitStatus(t, sid, run.RunID, core.StatusCompleted)
	if _, err := e.c.AppendContext(bg, api.ContextAppendParams{SessionID: sid, Kind: core.EntryMessage, Text: "now"}); err != nil {
		t.Fatalf("append once idle: %v", err)
	}
}

func TestBlobsPutAndRead(t *testing.T) {
	e := newEnv(t)
	data := []byte("binary \x00\x01\xff and text")
	put, err := e.c.PutBlob(bg, data, "application/x-test")
	if err != nil {
		t.Fatal(err)
	}
	if put.Ref.Digest != content.Sum(data) || put.Ref.MediaType != "application/x-test" || put.Ref.ProviderKind != "" {
		t.Fatalf("blobs/put = %+v", put.Ref)
	}
	got, err := e.c.ReadBlob(bg, api.BlobReadParams{Ref: api.DigestRef(put.Ref.Digest)})
	if err != nil || !bytes.Equal(got.Data, data) {
		t.Fatalf("blobs/read = %q, %v", got.Data, err)
	}
	// The wire form of data is base64.
	var raw map[string]any
	if err := e.c.Call(bg, api.MethodBlobsRead, api.BlobReadParams{Ref: api.DigestRef(put.Ref.Digest)}, &raw); err != nil || raw["data"] != "YmluYXJ5IAAB/yBhbmQgdGV4dA==" {
		t.Fatalf("raw blobs/read = %v, %v", raw, err)
	}
	plain, err := e.c.PutBlob(bg, []byte("plain"), "")
	if err != nil || plain.Ref.MediaType != "application/octet-stream" {
		t.Fatalf("blobs/put without media type = %+v, %v", plain, err)
	}
	empty, err := e.c.PutBlob(bg, nil, "text/plain")
	if err != nil || empty.Ref.Digest != content.Sum(nil) {
		t.Fatalf("empty blob = %+v, %v", empty, err)
	}
	if got, err := e.c.ReadBlob(bg, api.BlobReadParams{Ref: api.DigestRef(empty.Ref.Digest)}); err != nil || len(got.Data) != 0 {
		t.Fatalf("empty blob read = %q, %v", got.Data, err)
	}
}

func TestBlobsReadRejections(t *testing.T) {
	e := newEnv(t)
	absent := content.Sum([]byte("never stored"))
	_, err := e.c.ReadBlob(bg, api.BlobReadParams{Ref: api.DigestRef(absent)})
	rpcErr := wantKind(t, err, api.KindNotFound)
	if rpcErr.Code != api.CodeDomain || !strings.Contains(rpcErr.Message, absent.String()) {
		t.Fatalf("not found error = %+v", rpcErr)
	}
	wantKind(t, e.c.Call(bg, api.MethodBlobsRead, map[string]any{}, nil), api.KindInvalidParams)
	wantKind(t, e.c.Call(bg, api.MethodBlobsRead, map[string]any{"ref": "sha256:abc"}, nil), api.KindInvalidParams)
	wantKind(t, e.c.Call(bg, api.MethodBlobsPut, map[string]any{"data": "not base64!"}, nil), api.KindInvalidParams)
	if usage, err := e.blobs.Usage(bg); err != nil || usage.Blobs != int64(len(core.ConstantBlobs())) {
		t.Fatalf("store holds %+v after rejected blob calls, want only the constants", usage)
	}
}

// Every session method refuses a missing sessionId and an unknown session.
func TestSessionMethodsRequireAnExistingSession(t *testing.T) {
	e := newEnv(t)
	e.create(t, api.CreateSessionParams{SessionID: "real"})
	calls := map[string]func(id string) error{
		api.MethodSessionRead: func(id string) error { _, err := e.c.ReadSession(bg, id); return err },
		api.MethodRunsStart: func(id string) error {
			_, err := e.c.StartRun(bg, api.RunStartParams{SessionID: id, Input: textInput("x")})
			return err
		},
		api.MethodRunsRead: func(id string) error { _, err := e.c.ReadRun(bg, id, "run_1"); return err },
		api.MethodRunsSteer: func(id string) error {
			_, err := e.c.Steer(bg, api.SteerParams{SessionID: id, Input: textInput("x")})
			return err
		},
		api.MethodRunsCancel: func(id string) error { _, err := e.c.CancelRun(bg, id, "run_1"); return err },
		api.MethodEventsRead: func(id string) error {
			_, err := e.c.ReadEvents(bg, api.EventsReadParams{SessionID: id, WaitMs: 10})
			return err
		},
		api.MethodContextRead: func(id string) error { _, err := e.c.ReadContext(bg, id); return err },
		api.MethodContextAppend: func(id string) error {
			_, err := e.c.AppendContext(bg, api.ContextAppendParams{SessionID: id, Kind: core.EntryMessage, Text: "x"})
			return err
		},
		api.MethodContextRemove: func(id string) error {
			_, err := e.c.RemoveContext(bg, api.ContextRemoveParams{SessionID: id, Key: "k"})
			return err
		},
	}
	for method, call := range calls {
		t.Run(method, func(t *testing.T) {
			e.rejected(t, "real", api.KindNotFound, func() error { return call("nope") })
			e.rejected(t, "real", api.KindInvalidParams, func() error { return call("") })
		})
	}
	list, err := e.c.ListSessions(bg, api.SessionListParams{})
	if err != nil || len(list.Sessions) != 1 {
		t.Fatalf("sessions = %+v, %v; the calls created something", list.Sessions, err)
	}
}

// Reads that need not wait never ask the host to watch the session (on the
// Temporal gateway a watch holds a listener): no waitMs, or events already
// past `after`.
func TestEventsReadsThatNeedNotWaitStartNoWatch(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{})
	head := e.read(t, sid).Head
	e.drainChanged()
	for range 20 {
		if _, err := e.c.ReadEvents(bg, api.EventsReadParams{SessionID: sid, After: head}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.ReadEvents(bg, api.EventsReadParams{SessionID: sid, After: 0, WaitMs: 20_000}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-e.changed:
		t.Fatal("a read that did not wait started a change watch")
	default:
	}
}
