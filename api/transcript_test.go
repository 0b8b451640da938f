package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/view"
)

func TestTranscript_ReadPagesAndFollows(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{Model: testModel(), Instructions: "be brief"})
	long := "please " + strings.Repeat("read this ", 60) // longer than any preview
	r := e.start(t, sid, long)
	e.waitStatus(t, sid, r.RunID, core.StatusCompleted)

	all, err := e.c.ReadTranscript(bg, api.TranscriptReadParams{SessionID: sid, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	head := e.read(t, sid).Head
	if all.Head != head || all.Cursor != 0 || len(all.Events) != int(head) || all.Events[0].Seq != 1 {
		t.Fatalf("whole transcript: %d events, head %d (session head %d), cursor %d", len(all.Events), all.Head, head, all.Cursor)
	}
	var input, user, assistant, output string
	var sawInstructions bool
	for _, ev := range all.Events {
		d := ev.Display
		if d == nil {
			continue
		}
		switch d.Kind {
		case view.DisplayInput:
			input = *d.Input[0].Text
		case view.DisplayOutput:
			output = *d.Content.Text
		case view.DisplayEntries:
			for _, en := range d.Entries {
				switch {
				case en.Kind == core.EntryInstructions:
					sawInstructions = en.Preview == "be brief" && en.Text == nil
				case en.Role == core.RoleUser:
					user = *en.Text
				case en.Role == core.RoleAssistant:
					assistant = *en.Text
				}
			}
		}
	}
	if input != long || user != long || assistant != "echo: "+long || output != "echo: "+long || !sawInstructions {
		t.Fatalf("display: input %d bytes, user %d, assistant %q, output %q, instructions shown %v", len(input), len(user), assistant, output, sawInstructions)
	}

	// Page backward from the head, then follow forward from it.
	first, err := e.c.ReadTranscript(bg, api.TranscriptReadParams{SessionID: sid, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if first.Head != head || len(first.Events) != 3 || first.Events[2].Seq != head || first.Cursor != head-2 {
		t.Fatalf("latest page: head %d cursor %d events %d", first.Head, first.Cursor, len(first.Events))
	}
	older, err := e.c.ReadTranscript(bg, api.TranscriptReadParams{SessionID: sid, Before: first.Cursor, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if older.Head != 0 || len(older.Events) != 3 || older.Events[2].Seq != first.Cursor-1 {
		t.Fatalf("older page: head %d, events %+v", older.Head, older.Events)
	}
	r2 := e.start(t, sid, "again")
	e.waitStatus(t, sid, r2.RunID, core.StatusCompleted)
	next, err := e.c.ReadTranscript(bg, api.TranscriptReadParams{SessionID: sid, After: &first.Head})
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Events) == 0 || next.Events[0].Seq != head+1 || next.Head != e.read(t, sid).Head || next.Cursor != 0 {
		t.Fatalf("forward read from %d: head %d, %d events", first.Head, next.Head, len(next.Events))
	}
	if d := next.Events[0].Display; d == nil || d.Kind != view.DisplayInput || *d.Input[0].Text != "again" {
		t.Fatalf("first event after the head: %+v", next.Events[0])
	}
	zero := int64(0)
	fromStart, err := e.c.ReadTranscript(bg, api.TranscriptReadParams{SessionID: sid, After: &zero, Limit: 2})
	if err != nil || len(fromStart.Events) != 2 || fromStart.Events[0].Seq != 1 {
		t.Fatalf("after 0: %+v, %v", fromStart, err)
	}

	for _, p := range []api.TranscriptReadParams{
		{SessionID: sid, Limit: 501},
		{SessionID: sid, Limit: -1},
		{SessionID: sid, Before: 3, After: &zero},
		{SessionID: sid, Before: -2},
		{},
	} {
		_, err := e.c.ReadTranscript(bg, p)
		wantKind(t, err, api.KindInvalidParams)
	}
	_, err = e.c.ReadTranscript(bg, api.TranscriptReadParams{SessionID: "nobody"})
	wantKind(t, err, api.KindNotFound)
}

func TestTranscript_WireShape(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{Model: testModel()})
	r := e.start(t, sid, "hi")
	e.waitStatus(t, sid, r.RunID, core.StatusCompleted)
	resp := e.postOne(t, `{"jsonrpc":"2.0","id":1,"method":"session/transcript/read","params":{"sessionId":"`+sid+`","limit":2}}`)
	if resp.Error != nil {
		t.Fatal(resp.Error)
	}
	var got struct {
		Events []map[string]json.RawMessage `json:"events"`
		Head   int64                        `json:"head"`
		Cursor int64                        `json:"cursor"`
	}
	if err := json.Unmarshal(resp.Result, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 2 || got.Head == 0 || got.Cursor != got.Head-1 {
		t.Fatalf("result %s", resp.Result)
	}
	last := got.Events[1]
	for _, k := range []string{"seq", "kind", "observedAtMs", "payload", "display"} {
		if _, ok := last[k]; !ok {
			t.Fatalf("event without %q: %s", k, resp.Result)
		}
	}
	var d map[string]any
	_ = json.Unmarshal(last["display"], &d)
	if string(last["kind"]) != `"run.completed"` || d["kind"] != view.DisplayOutput || d["runId"] != r.RunID {
		t.Fatalf("last event %s, display %v", last["kind"], d)
	}
	c, _ := d["content"].(map[string]any)
	ref, _ := c["ref"].(map[string]any)
	if c["text"] != "echo: hi" || ref["digest"] == nil || ref["mediaType"] == nil {
		t.Fatalf("output content %v", c)
	}
	resp = e.postOne(t, `{"jsonrpc":"2.0","id":2,"method":"session/transcript/read","params":{"sessionId":"`+sid+`","limit":2,"from":3}}`)
	if resp.Error == nil || resp.Error.Kind() != api.KindInvalidParams {
		t.Fatalf("an unknown param was accepted: %+v", resp)
	}
}
