package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// wantRPCError checks a response's error code, kind and id, and that it has no result.
func wantRPCError(t *testing.T, resp api.Response, code int, kind, id string) {
	t.Helper()
	if resp.Error == nil {
		t.Fatalf("response has no error: %+v", resp)
	}
	if resp.Error.Code != code || resp.Error.Kind() != kind {
		t.Fatalf("error %d %q (%s), want %d %s", resp.Error.Code, resp.Error.Kind(), resp.Error.Message, code, kind)
	}
	if string(resp.ID) != id {
		t.Fatalf("response id %s, want %s", resp.ID, id)
	}
	if resp.Result != nil {
		t.Fatalf("error response also has a result: %s", resp.Result)
	}
}

func TestProtocolParseError(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{SessionID: "parse"})
	appendReq := `{"jsonrpc":"2.0","id":1,"method":"session/context/append","params":{"sessionId":"parse","kind":"message","text":"x"}}`
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":`,
		appendReq + ` trailing`, // one valid request followed by garbage is not a request
		appendReq + appendReq,
		``,
		`[` + appendReq + `,`,
	} {
		e.unchanged(t, sid, func() {
			wantRPCError(t, e.postOne(t, body), api.CodeParseError, api.KindParseError, "null")
		})
	}
}

func TestProtocolInvalidRequest(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{SessionID: "proto"})
	before := e.snapshot(t, sid)
	for _, tc := range []struct{ body, id string }{
		{`{"id":7,"method":"session/list"}`, "7"},                 // no jsonrpc
		{`{"jsonrpc":"1.0","id":8,"method":"session/list"}`, "8"}, // wrong version
		{`{"jsonrpc":"2.0","id":"nine"}`, `"nine"`},               // no method
		{`{"jsonrpc":"2.0","id":10,"method":7}`, "10"},            // method is not a string
		{`17`, "null"}, // not an object
		{`{"id":11,"method":"session/context/append","params":{"sessionId":"proto","kind":"message","text":"x"}}`, "11"}, // a write without jsonrpc
	} {
		resp := e.postOne(t, tc.body)
		wantRPCError(t, resp, api.CodeInvalidRequest, api.KindInvalidRequest, tc.id)
	}
	if after := e.snapshot(t, sid); after.Session.Head != before.Session.Head || after.Context.Revision != before.Context.Revision {
		t.Fatalf("an invalid request changed the session: %+v → %+v", before.Session, after.Session)
	}
}

func TestProtocolMethodNotFound(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{SessionID: "x"})
	e.unchanged(t, sid, func() {
		resp := e.postOne(t, `{"jsonrpc":"2.0","id":"abc","method":"session/teleport","params":{"sessionId":"x"}}`)
		wantRPCError(t, resp, api.CodeMethodNotFound, api.KindMethodNotFound, `"abc"`)
		if !strings.Contains(resp.Error.Message, "session/teleport") {
			t.Fatalf("message %q does not name the method", resp.Error.Message)
		}
	})
}

func TestProtocolNotificationGetsNoResponse(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{SessionID: "notified"})
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"session/list"}`,
		`{"jsonrpc":"2.0","method":"no/such/method"}`,
		`{"jsonrpc":"2.0","method":"session/context/append","params":{"sessionId":"notified","kind":"message","text":"fire and forget"}}`,
	} {
		status, _, data := e.post(t, body)
		if status != http.StatusNoContent || len(data) != 0 {
			t.Fatalf("notification %s: HTTP %d with body %q, want 204 and none", body, status, data)
		}
	}
	// A notification is still carried out; only its response is dropped.
	cx := e.context(t, sid)
	if cx.Revision != 1 || len(cx.Entries) != 1 || cx.Entries[0].Preview != "fire and forget" {
		t.Fatalf("context after the notification = %+v", cx)
	}
}

func TestProtocolBatch(t *testing.T) {
	e := newEnv(t)
	e.create(t, api.CreateSessionParams{SessionID: "batched"})
	status, ctype, data := e.post(t, `[
		{"jsonrpc":"2.0","id":1,"method":"session/read","params":{"sessionId":"batched"}},
		{"jsonrpc":"2.0","id":"two","method":"session/list"}
	]`)
	if status != http.StatusOK || !strings.HasPrefix(ctype, "application/json") {
		t.Fatalf("batch: HTTP %d %s: %s", status, ctype, data)
	}
	var out []api.Response
	if err := json.Unmarshal(data, &out); err != nil || len(out) != 2 {
		t.Fatalf("batch response %s: %v", data, err)
	}
	if string(out[0].ID) != "1" || string(out[1].ID) != `"two"` || out[0].Error != nil || out[1].Error != nil {
		t.Fatalf("batch responses %s", data)
	}
	var read api.SessionReadResult
	var list api.SessionListResult
	if json.Unmarshal(out[0].Result, &read) != nil || read.SessionID != "batched" || read.Head != 1 {
		t.Fatalf("session/read in a batch = %s", out[0].Result)
	}
	if json.Unmarshal(out[1].Result, &list) != nil || len(list.Sessions) != 1 || list.Sessions[0].SessionID != "batched" {
		t.Fatalf("session/list in a batch = %s", out[1].Result)
	}

	// Notifications in a batch get no response; a batch of only notifications gets 204.
	status, _, data = e.post(t, `[{"jsonrpc":"2.0","method":"session/list"},{"jsonrpc":"2.0","id":3,"method":"session/list"}]`)
	out = nil
	if err := json.Unmarshal(data, &out); status != http.StatusOK || err != nil || len(out) != 1 || string(out[0].ID) != "3" {
		t.Fatalf("batch with a notification: HTTP %d %s", status, data)
	}
	status, _, data = e.post(t, `[{"jsonrpc":"2.0","method":"session/list"},{"jsonrpc":"2.0","method":"session/list"}]`)
	if status != http.StatusNoContent || len(data) != 0 {
		t.Fatalf("batch of notifications: HTTP %d %q", status, data)
	}

	// An empty batch is one invalid request; a batch of non-requests gets one error each.
	wantRPCError(t, e.postOne(t, `[]`), api.CodeInvalidRequest, api.KindInvalidRequest, "null")
	status, _, data = e.post(t, `[1, {"jsonrpc":"2.0","id":4,"method":"nope"}]`)
	out = nil
	if err := json.Unmarshal(data, &out); status != http.StatusOK || err != nil || len(out) != 2 {
		t.Fatalf("mixed batch: HTTP %d %s", status, data)
	}
	wantRPCError(t, out[0], api.CodeInvalidRequest, api.KindInvalidRequest, "null")
	wantRPCError(t, out[1], api.CodeMethodNotFound, api.KindMethodNotFound, "4")
}

func TestProtocolUnknownParamsAreInvalid(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{SessionID: "strict"})
	e.rejected(t, sid, api.KindInvalidParams, func() error {
		return e.c.Call(bg, api.MethodContextAppend, map[string]any{"sessionId": sid, "kind": "message", "text": "x", "expectedRevison": 0}, nil)
	})
	e.rejected(t, sid, api.KindInvalidParams, func() error {
		return e.c.Call(bg, api.MethodRunsStart, map[string]any{"sessionId": sid, "input": []map[string]string{{"type": "text", "text": "x", "lang": "en"}}}, nil)
	})
	e.rejected(t, sid, api.KindInvalidParams, func() error {
		return e.c.Call(bg, api.MethodSessionCreate, map[string]any{"sessionId": "other", "model": testModel(), "instruction": "typo"}, nil)
	})
	// Positional params are not supported, and say so.
	resp := e.postOne(t, `{"jsonrpc":"2.0","id":5,"method":"session/read","params":["strict"]}`)
	wantRPCError(t, resp, api.CodeInvalidParams, api.KindInvalidParams, "5")
	if list, err := e.c.ListSessions(bg, api.SessionListParams{}); err != nil || len(list.Sessions) != 1 {
		t.Fatalf("sessions = %+v, %v", list.Sessions, err)
	}
}

func TestProtocolOnlyPOST(t *testing.T) {
	e := newEnv(t)
	resp, err := http.Get(e.url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /rpc: HTTP %d, want 405", resp.StatusCode)
	}
}

// An unexpected error is logged on the server and reported to the client as
// a bare "internal error": its detail never leaks.
func TestInternalErrorsDoNotLeak(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{SessionID: "leaky"})
	e.blobs.failPuts.Store(true)

	calls := map[string]func() error{
		api.MethodBlobsPut: func() error { _, err := e.c.PutBlob(bg, []byte("x"), ""); return err },
		api.MethodRunsStart: func() error {
			_, err := e.c.StartRun(bg, api.RunStartParams{SessionID: sid, Input: textInput("x")})
			return err
		},
		api.MethodContextAppend: func() error {
			_, err := e.c.AppendContext(bg, api.ContextAppendParams{SessionID: sid, Kind: core.EntryMessage, Text: "x"})
			return err
		},
		api.MethodSessionCreate: func() error {
			_, err := e.c.CreateSession(bg, api.CreateSessionParams{SessionID: "other", Model: testModel(), Instructions: "x"})
			return err
		},
	}
	for method, call := range calls {
		t.Run(method, func(t *testing.T) {
			rpcErr := e.rejected(t, sid, api.KindInternal, call)
			if rpcErr.Code != api.CodeInternal || rpcErr.Message != "internal error" {
				t.Fatalf("error %d %q, want %d \"internal error\"", rpcErr.Code, rpcErr.Message, api.CodeInternal)
			}
			if strings.Contains(rpcErr.Error(), secretDetail) {
				t.Fatalf("error leaks the detail: %v", rpcErr)
			}
		})
	}
	// Nor does the raw response carry it anywhere.
	_, _, data := e.post(t, `{"jsonrpc":"2.0","id":1,"method":"blobs/put","params":{"data":"eA=="}}`)
	if strings.Contains(string(data), secretDetail) || !strings.Contains(string(data), `"internal error"`) {
		t.Fatalf("raw response: %s", data)
	}
	// The operator still gets the detail, in the server's log.
	if !strings.Contains(e.logs.String(), secretDetail) {
		t.Fatalf("server log lacks the error detail:\n%s", e.logs.String())
	}
	if _, err := e.c.ReadSession(bg, "other"); err == nil {
		t.Fatal("a session was created although storing its instructions failed")
	}
	e.blobs.failPuts.Store(false)
	if _, err := e.c.PutBlob(bg, []byte("x"), ""); err != nil {
		t.Fatalf("after the store recovers: %v", err)
	}
}
