package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// cairn session fork|clone|close|delete against an embedded server.
func TestSessionCommands(t *testing.T) {
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
	for _, text := range []string{"first", "second"} {
		if _, err := c.AppendContext(ctx, api.ContextAppendParams{SessionID: sid, Kind: core.EntryMessage, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	head, err := c.ReadSession(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}

	out := s.mustCairn(t, "session", "fork", sid)
	fork, _, _ := strings.Cut(out, " ")
	if want := fmt.Sprintf("%s (fork of %s at seq %d)\n", fork, sid, head.Head); out != want || fork == sid {
		t.Fatalf("session fork printed %q, want %q", out, want)
	}
	var early api.SessionForkResult
	if err := json.Unmarshal([]byte(s.mustCairn(t, "session", "fork", sid, "--at", "3", "--id", "early", "--json")), &early); err != nil {
		t.Fatal(err)
	}
	if early != (api.SessionForkResult{SessionID: "early", AtSeq: 3}) {
		t.Fatalf("session fork --at 3 --json = %+v", early)
	}
	cx, err := c.ReadContext(ctx, "early")
	if err != nil || len(cx.Entries) != 2 || cx.Entries[1].Preview != "first" {
		t.Fatalf("context of the fork at 3: %+v, %v", cx.Entries, err)
	}
	got, err := c.ReadSession(ctx, fork)
	if err != nil || got.Source == nil || *got.Source != (api.SessionSource{SessionID: sid, AtSeq: head.Head}) {
		t.Fatalf("session/read of the fork: %+v, %v", got, err)
	}
	if _, err := s.cairn(t, "session", "fork", sid, "--at", "99"); err == nil || !strings.Contains(err.Error(), "atSeq") {
		t.Fatalf("fork past the head: %v", err)
	}

	out = s.mustCairn(t, "session", "clone", sid)
	clone, _, _ := strings.Cut(out, " ")
	if out != clone+" (clone of "+sid+")\n" {
		t.Fatalf("session clone printed %q", out)
	}
	if cx, err := c.ReadContext(ctx, clone); err != nil || len(cx.Entries) != 1 || cx.Entries[0].Preview != "be brief" {
		t.Fatalf("clone context: %+v, %v", cx, err)
	}

	if out := s.mustCairn(t, "session", "close", sid, "--reason", "finished"); out != sid+" closed\n" {
		t.Fatalf("session close printed %q", out)
	}
	if _, err := s.cairn(t, "session", "delete", sid); err == nil || !strings.Contains(err.Error(), api.KindSessionHasForks) ||
		!strings.Contains(err.Error(), "cairn session delete "+sid+" --cascade") {
		t.Fatalf("delete of a session with forks: %v", err)
	}
	if _, err := s.cairn(t, "session", "delete", sid, "--cascade"); err == nil || !strings.Contains(err.Error(), api.KindSessionNotClosed) {
		t.Fatalf("cascade over open forks: %v", err)
	}
	s.mustCairn(t, "session", "close", fork)
	s.mustCairn(t, "session", "close", "early")
	if out := s.mustCairn(t, "session", "delete", sid, "--cascade"); out != "deleted "+sid+" "+fork+" early\n" && out != "deleted "+sid+" early "+fork+"\n" {
		t.Fatalf("session delete --cascade printed %q", out)
	}
	if _, err := c.ReadSession(ctx, sid); err == nil {
		t.Fatal("the deleted session still reads")
	}
	var list api.SessionListResult
	if err := json.Unmarshal([]byte(s.mustCairn(t, "sessions", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].SessionID != clone {
		t.Fatalf("sessions after the delete: %+v", list.Sessions)
	}
}

// `cairn sessions` shows a page and, when more exist, the command that
// shows the next one.
func TestSessionsPagesWithACursor(t *testing.T) {
	s := startVFSServer(t)
	c := api.NewClient(s.url, nil)
	for _, id := range []string{"s1", "s2", "s3"} {
		if _, err := c.CreateSession(context.Background(), api.CreateSessionParams{SessionID: id, Model: core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "m"}}); err != nil {
			t.Fatal(err)
		}
	}
	out := s.mustCairn(t, "sessions", "--limit", "2")
	next := regexp.MustCompile(`(?m)^more sessions: cairn sessions --limit 2 --before (\S+)$`).FindStringSubmatch(out)
	if next == nil || strings.Count(out, "\ns") != 2 {
		t.Fatalf("the first page:\n%s", out)
	}
	out = s.mustCairn(t, "sessions", "--limit", "2", "--before", next[1])
	if strings.Contains(out, "more sessions") || strings.Count(out, "\ns") != 1 {
		t.Fatalf("the last page:\n%s", out)
	}
}

// `cairn session update` changes what its flags name, keeps the rest, and
// honours --expected-revision.
func TestSessionUpdateCommand(t *testing.T) {
	s := startVFSServer(t)
	c := api.NewClient(s.url, nil)
	if _, err := c.CreateSession(context.Background(), api.CreateSessionParams{SessionID: "s", Model: core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "m1"}}); err != nil {
		t.Fatal(err)
	}
	if out := s.mustCairn(t, "session", "update", "s", "--model", "m2", "--tool", "vfs_read_file", "--instructions", "Be terse."); out != "session s: configuration revision 2\n" {
		t.Fatalf("session update printed %q", out)
	}
	read, err := c.ReadSession(context.Background(), "s")
	if err != nil || read.Model != (core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "m2"}) || len(read.Tools) != 1 {
		t.Fatalf("after the update: %+v, %v", read, err)
	}
	if _, err := s.cairn(t, "session", "update", "s", "--tool", "", "--expected-revision", "1"); !isKind(err, core.RejectRevisionConflict) {
		t.Fatalf("an update of a stale revision: %v", err)
	}
	if _, err := s.cairn(t, "session", "update", "s"); err == nil || !strings.Contains(err.Error(), "name at least one") {
		t.Fatalf("an update of nothing: %v", err)
	}
}
