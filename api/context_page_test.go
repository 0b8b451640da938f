package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// appendNotes appends n user messages to a session's context.
func appendNotes(t *testing.T, e *env, sid string, n int) {
	t.Helper()
	for i := range n {
		if _, err := e.c.AppendContext(bg, api.ContextAppendParams{SessionID: sid, Kind: core.EntryMessage, Text: fmt.Sprintf("note %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
}

func entryIDs(entries []core.Entry) []string {
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	return ids
}

// session/context/read pages the context in request order: each page's
// cursor is after for the next, the last page has none, and the pages
// together are the whole context, now and at a seq.
func TestContextRead_PagesByEntryCursor(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{Instructions: "be brief"})
	appendNotes(t, e, sid, 6)
	whole := e.context(t, sid)
	if len(whole.Entries) != 7 {
		t.Fatalf("the context has %d entries, want 7", len(whole.Entries))
	}
	head := e.read(t, sid).Head
	for name, at := range map[string]*int64{"now": nil, "atSeq": &head} {
		var got []core.Entry
		var cursors []string
		after := ""
		for {
			page, err := e.c.ReadContextPage(bg, api.ContextReadParams{SessionID: sid, AtSeq: at, After: after, Limit: 3})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if page.Revision != whole.Revision || len(page.Entries) > 3 {
				t.Fatalf("%s: a page of %d entries at revision %d, want at most 3 at %d", name, len(page.Entries), page.Revision, whole.Revision)
			}
			got = append(got, page.Entries...)
			if page.Cursor == "" {
				break
			}
			cursors = append(cursors, page.Cursor)
			after = page.Cursor
		}
		if fmt.Sprint(entryIDs(got)) != fmt.Sprint(entryIDs(whole.Entries)) {
			t.Errorf("%s: the pages hold %v, want %v", name, entryIDs(got), entryIDs(whole.Entries))
		}
		if want := []string{whole.Entries[2].ID, whole.Entries[5].ID}; fmt.Sprint(cursors) != fmt.Sprint(want) {
			t.Errorf("%s: cursors %v, want the last entry of each full page %v", name, cursors, want)
		}
	}
	// Past the last entry: an empty page, no cursor.
	last := whole.Entries[len(whole.Entries)-1].ID
	page, err := e.c.ReadContextPage(bg, api.ContextReadParams{SessionID: sid, After: last})
	if err != nil || len(page.Entries) != 0 || page.Cursor != "" {
		t.Fatalf("after the last entry: %+v, %v; want no entries and no cursor", page, err)
	}
	var raw json.RawMessage
	if err := e.c.Call(bg, api.MethodContextRead, api.ContextReadParams{SessionID: sid, After: last}, &raw); err != nil || !strings.Contains(string(raw), `"entries":[]`) {
		t.Fatalf("an empty page is %s, %v; want entries: []", raw, err)
	}
}

// Without a limit a page holds 100 entries; the Go client's ReadContext
// follows the cursor to the whole context.
func TestContextRead_DefaultLimitAndWholeRead(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{Instructions: "be brief"})
	appendNotes(t, e, sid, 104)
	page, err := e.c.ReadContextPage(bg, api.ContextReadParams{SessionID: sid})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 100 || page.Cursor != page.Entries[99].ID {
		t.Fatalf("a page without limit: %d entries, cursor %q; want 100 and the last one's id", len(page.Entries), page.Cursor)
	}
	whole := e.context(t, sid)
	if len(whole.Entries) != 105 || whole.Cursor != "" || whole.Entries[99].ID != page.Cursor {
		t.Fatalf("ReadContext: %d entries, cursor %q; want all 105", len(whole.Entries), whole.Cursor)
	}
}

// A negative limit, one over the maximum and a cursor the context does not
// have are invalid_params, in the API's words, with atSeq too.
func TestContextRead_BadPageParamsAreInvalidParams(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{Instructions: "be brief"})
	appendNotes(t, e, sid, 2)
	before := e.snapshot(t, sid)
	one := int64(1)
	for name, tc := range map[string]struct {
		p    api.ContextReadParams
		want string
	}{
		"negative limit":       {api.ContextReadParams{SessionID: sid, Limit: -1}, "limit must be 0 to 1000"},
		"limit over max":       {api.ContextReadParams{SessionID: sid, Limit: 1001}, "limit must be 0 to 1000"},
		"unknown cursor":       {api.ContextReadParams{SessionID: sid, After: "e999"}, `after: entry "e999" is not in the context at revision 3`},
		"cursor not yet there": {api.ContextReadParams{SessionID: sid, AtSeq: &one, After: before.Context.Entries[2].ID}, "is not in the context at revision"},
	} {
		_, err := e.c.ReadContextPage(bg, tc.p)
		if rpcErr := wantKind(t, err, api.KindInvalidParams); !strings.Contains(rpcErr.Message, tc.want) {
			t.Errorf("%s: %q, want it to say %q", name, rpcErr.Message, tc.want)
		}
	}
	if after := e.snapshot(t, sid); !reflect.DeepEqual(after, before) {
		t.Fatalf("refused reads changed the session: %+v, was %+v", after, before)
	}
}

// ReadContext returns one revision's context: when a page comes back at
// another revision, or its cursor's entry has left, it starts again.
func TestClient_ReadContextStartsAgainWhenTheContextChanges(t *testing.T) {
	// A scripted server: each answer is given to the request with that after.
	script := []struct{ after, result string }{
		{"", `{"revision":1,"entries":[{"entryId":"e1"}],"cursor":"e1"}`},
		{"e1", `{"revision":2,"entries":[{"entryId":"e3"}]}`}, // changed: start again
		{"", `{"revision":2,"entries":[{"entryId":"e1"}],"cursor":"e1"}`},
		{"e1", `error`}, // e1 has left: start again
		{"", `{"revision":3,"entries":[{"entryId":"e2"}],"cursor":"e2"}`},
		{"e2", `{"revision":3,"entries":[{"entryId":"e4"}]}`},
	}
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage       `json:"id"`
			Params api.ContextReadParams `json:"params"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Error(err)
		}
		mu.Lock()
		step := script[n]
		n++
		mu.Unlock()
		if req.Params.After != step.after || req.Params.Limit != 1000 {
			t.Errorf("request %d: after %q, limit %d; want after %q, limit 1000", n, req.Params.After, req.Params.Limit, step.after)
		}
		w.Header().Set("Content-Type", "application/json")
		if step.result == "error" {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"after: gone","data":{"kind":"invalid_params"}}}`, req.ID)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, step.result)
	}))
	defer srv.Close()
	got, err := api.NewClient(srv.URL, nil).ReadContext(bg, "s")
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != 3 || fmt.Sprint(entryIDs(got.Entries)) != "[e2 e4]" || n != len(script) {
		t.Fatalf("ReadContext = revision %d, %v after %d requests; want revision 3, [e2 e4] after %d", got.Revision, entryIDs(got.Entries), n, len(script))
	}
}
