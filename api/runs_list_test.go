package api_test

import (
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

func TestRuns_ListPagesNewestFirst(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{Model: testModel()})
	var ids []string
	for _, q := range []string{"one", "two", "three"} {
		r := e.start(t, sid, q)
		e.waitStatus(t, sid, r.RunID, core.StatusCompleted)
		ids = append(ids, r.RunID)
	}
	page, err := e.c.ListRuns(bg, api.RunsListParams{SessionID: sid, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Runs) != 2 || page.Runs[0].RunID != ids[2] || page.Runs[1].RunID != ids[1] || page.Cursor == 0 {
		t.Fatalf("first page %+v", page)
	}
	if page.Runs[0].Status != core.StatusCompleted || page.Runs[0].Turns != 1 || page.Runs[0].EndedSeq <= page.Runs[0].AcceptedSeq {
		t.Fatalf("run summary %+v", page.Runs[0])
	}
	next, err := e.c.ListRuns(bg, api.RunsListParams{SessionID: sid, Before: page.Cursor, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Runs) != 1 || next.Runs[0].RunID != ids[0] || next.Cursor != 0 {
		t.Fatalf("second page %+v", next)
	}
	_, err = e.c.ListRuns(bg, api.RunsListParams{SessionID: sid, Limit: 501})
	wantKind(t, err, api.KindInvalidParams)
}
