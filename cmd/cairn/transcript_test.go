package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/view"
)

func TestTranscriptCommandPagesAndFollows(t *testing.T) {
	s := startVFSServer(t)
	ctx := demoContext(t)
	c := api.NewClient(s.url, nil)
	created, err := c.CreateSession(ctx, api.CreateSessionParams{
		Model:        core.ModelSelection{ProviderID: "openai", APIKind: core.APIChatCompletions, Model: "gpt-test"},
		Instructions: "be brief",
	})
	if err != nil {
		t.Fatal(err)
	}
	sid := created.SessionID
	say := func(text string) {
		t.Helper()
		if _, err := c.AppendContext(ctx, api.ContextAppendParams{SessionID: sid, Kind: core.EntryMessage, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	say("first note\nwith a second line")
	say("second note")
	say("third note")

	latest := s.mustCairn(t, "transcript", sid, "--limit", "2")
	head, err := c.ReadSession(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	wantHint := fmt.Sprintf("(earlier events: cairn transcript %s --before %d)\n", sid, head.Head-1)
	if latest != wantHint+"user> second note\nuser> third note\n" {
		t.Fatalf("latest page:\n%s", latest)
	}
	older := s.mustCairn(t, "transcript", sid, "--limit", "2", "--before", fmt.Sprint(head.Head-1))
	if !strings.HasSuffix(older, "instructions> be brief\nuser> first note\n  with a second line\n") || !strings.HasPrefix(older, "(earlier events:") {
		t.Fatalf("older page:\n%s", older)
	}
	var page api.TranscriptReadResult
	if err := json.Unmarshal([]byte(s.mustCairn(t, "transcript", sid, "--json")), &page); err != nil {
		t.Fatal(err)
	}
	if page.Head != head.Head || page.Cursor != 0 || len(page.Events) != int(head.Head) || page.Events[len(page.Events)-1].Display.Entries[0].Preview != "" {
		t.Fatalf("--json page: head %d cursor %d, %d events", page.Head, page.Cursor, len(page.Events))
	}
	if _, err := s.cairn(t, "transcript", sid, "--follow", "--before", "2"); err == nil {
		t.Fatal("--follow with --before was accepted")
	}
	if _, err := s.cairn(t, "transcript", sid, "--limit", "501"); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("--limit 501: %v", err)
	}

	// --follow prints the latest page, then what is committed after it.
	followCtx, stop := context.WithCancel(ctx)
	defer stop()
	out := &testenv.Buffer{}
	root := rootCommand()
	root.SetArgs([]string{"transcript", sid, "--limit", "1", "--follow", "--server", s.url})
	root.SetOut(out)
	root.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(followCtx) }()
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("--follow never printed %q:\n%s", want, out.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("user> third note\n")
	say("fourth note")
	say("fifth note")
	waitFor("user> fifth note\n")
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("--follow ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("--follow did not end when its context did")
	}
	want := "user> third note\nuser> fourth note\nuser> fifth note\n"
	if got := out.String(); !strings.HasSuffix(got, want) || strings.Count(got, "note") != 3 {
		t.Fatalf("--follow printed:\n%s\nwant it to end with:\n%s", got, want)
	}
}

func TestTranscriptPrinterShowsOneBlockPerEvent(t *testing.T) {
	text := func(s string) *string { return &s }
	ref := content.Sum([]byte("png"))
	evs := []view.TranscriptEvent{
		{Seq: 1, Kind: core.KindSessionOpened},
		{Seq: 2, Display: &view.Display{Kind: view.DisplayInput, RunID: "r1", Input: []view.Content{{Text: text("what is in notes.md?")}}}},
		{Seq: 3, Display: &view.Display{Kind: view.DisplayEntries, Entries: []view.TranscriptEntry{
			{Kind: core.EntryMessage, Role: core.RoleUser, Source: core.SourceUser, Content: view.Content{Text: text("what is in notes.md?")}},
			{Kind: core.EntryReasoning, Role: core.RoleAssistant, Content: view.Content{Text: text("look at the file")}},
			{Kind: core.EntryToolCall, CallID: "c1", ToolName: "vfs_read", Content: view.Content{Preview: "vfs_read({})"}},
			{Kind: core.EntryCatalog, Key: "catalog.skills", Content: view.Content{Preview: "skills: release"}},
		}}},
		{Seq: 4, Display: &view.Display{Kind: view.DisplayToolCall, CallID: "c1", Name: "vfs_read", Content: &view.Content{Preview: `{"path":"notes.md"}`}}},
		{Seq: 5, Display: &view.Display{Kind: view.DisplayToolResult, CallID: "c1", Status: core.CallOK, Content: &view.Content{Preview: "line one\nline two"}}},
		{Seq: 6, Display: &view.Display{Kind: view.DisplayToolResult, CallID: "c2", Status: core.CallOK, Content: &view.Content{Ref: content.ContentRef{Digest: ref, MediaType: "image/png"}}}},
		{Seq: 7, Display: &view.Display{Kind: view.DisplayEntries, Entries: []view.TranscriptEntry{
			{Kind: core.EntryToolResult, CallID: "c1", Content: view.Content{Preview: "line one"}},
			{Kind: core.EntryMessage, Role: core.RoleAssistant, Content: view.Content{Text: text("It has two lines:\none\ntwo\n")}},
			{Kind: core.EntryMessage, Role: core.RoleAssistant, Content: view.Content{Text: text("I can't help with that."), Refusal: true}},
		}}},
		{Seq: 8, Display: &view.Display{Kind: view.DisplayOutput, RunID: "r1", Content: &view.Content{Ref: content.ContentRef{Digest: ref, MediaType: content.MediaJSON, ProviderKind: "openai.chat.message"}, Text: text("It has two lines:\none\ntwo\n")}}},
		{Seq: 8, Display: &view.Display{Kind: view.DisplayOutput, RunID: "r9", Content: &view.Content{Ref: content.ContentRef{Digest: ref, MediaType: "audio/wav"}}}},
		{Seq: 9, Display: &view.Display{Kind: view.DisplaySteering, RunID: "r2", Input: []view.Content{{Text: text("shorter")}}}},
		{Seq: 10, Display: &view.Display{Kind: view.DisplayFailure, RunID: "r2", Failure: &core.Failure{Kind: "turn_limit", Message: "too many turns"}}},
		{Seq: 11, Display: &view.Display{Kind: view.DisplayCompactionRequested, CompactionID: "cmp1", Trigger: "manual", Count: 3, EstimatedTokens: 120}},
		{Seq: 12, Display: &view.Display{Kind: view.DisplayCompacted, Trigger: "manual", Count: 3, RemovedEntryIDs: []string{"e1", "e2", "e3"},
			Entries: []view.TranscriptEntry{{Kind: core.EntrySummary, Content: view.Content{Text: text("they read notes.md")}}}}},
		{Seq: 13, Display: &view.Display{Kind: view.DisplayCancelled, RunID: "r3"}},
	}
	var out bytes.Buffer
	p := &transcriptPrinter{out: &out, names: map[string]string{}}
	if err := p.printAll(evs); err != nil {
		t.Fatal(err)
	}
	want := `user> what is in notes.md?
reasoning> look at the file
[catalog catalog.skills] skills: release
tool> vfs_read {"path":"notes.md"}
result> vfs_read [ok] line one line two
result> c2 [ok] [image/png ` + ref.String() + `]
assistant> It has two lines:
  one
  two
assistant (refusal)> I can't help with that.
-- run r1 completed
-- run r9 completed: [audio/wav ` + ref.String() + `]
user (steering)> shorter
-- run r2 failed: turn_limit: too many turns
-- compaction cmp1 requested (manual): 3 entries, about 120 tokens
-- context compacted (manual): 3 entries removed (e1 e2 e3), replaced by 1
summary> they read notes.md
-- run r3 cancelled
`
	if out.String() != want {
		t.Fatalf("printed:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	p.json = true
	if err := p.printAll([]view.TranscriptEvent{evs[0], evs[len(evs)-1]}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var ev view.TranscriptEvent
	if len(lines) != 2 || json.Unmarshal([]byte(lines[1]), &ev) != nil || ev.Display == nil || ev.Display.Kind != view.DisplayCancelled || ev.Seq != 13 {
		t.Fatalf("--json lines:\n%s", out.String())
	}
}

// An event missing from the store fails cairn transcript (a non-zero exit)
// with history_incomplete, for the session and for a history fork that
// reads it through the source; a page whose range is whole still prints.
func TestTranscriptCommandFailsOnIncompleteHistory(t *testing.T) {
	dir := t.TempDir()
	st, err := openStack(context.Background(), dir, hostOptions{logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.NewServer(st.host, api.ServerOptions{APIKinds: st.kinds}).Handler())
	t.Cleanup(func() { srv.Close(); st.close() })
	s := &vfsServer{url: srv.URL, st: st}
	ctx := demoContext(t)
	c := api.NewClient(s.url, nil)
	created, err := c.CreateSession(ctx, api.CreateSessionParams{
		Model:        core.ModelSelection{ProviderID: "openai", APIKind: core.APIChatCompletions, Model: "gpt-test"},
		Instructions: "be brief",
	})
	if err != nil {
		t.Fatal(err)
	}
	sid := created.SessionID
	for _, text := range []string{"one", "two", "three"} {
		if _, err := c.AppendContext(ctx, api.ContextAppendParams{SessionID: sid, Kind: core.EntryMessage, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	at := int64(4)
	fork, err := c.ForkSession(ctx, api.SessionForkParams{SessionID: sid, AtSeq: &at})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendContext(ctx, api.ContextAppendParams{SessionID: fork.SessionID, Kind: core.EntryMessage, Text: "fork's own"}); err != nil {
		t.Fatal(err)
	}
	s.mustCairn(t, "transcript", sid)
	s.mustCairn(t, "transcript", fork.SessionID)

	// Lose the source's event 3, below the fork point.
	db, err := sql.Open("sqlite", filepath.Join(dir, "cairn.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if res, err := db.Exec(`DELETE FROM events WHERE session_id = ? AND seq = 3`, sid); err != nil {
		t.Fatal(err)
	} else if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("deleted %d events", n)
	}
	for _, args := range [][]string{
		{"transcript", sid},
		{"transcript", fork.SessionID},
		{"transcript", fork.SessionID, "--before", "5"},
		{"transcript", fork.SessionID, "--json"},
	} {
		out, err := s.cairn(t, args...)
		if err == nil || !strings.Contains(err.Error(), "history_incomplete") || !strings.Contains(err.Error(), "event 3 ") {
			t.Errorf("cairn %s: err %v, output:\n%s\nwant a history_incomplete error naming event 3", strings.Join(args, " "), err, out)
		}
	}
	if out := s.mustCairn(t, "transcript", fork.SessionID, "--limit", "1"); !strings.Contains(out, "fork's own") {
		t.Fatalf("the fork's latest event, above the hole:\n%s", out)
	}
}
