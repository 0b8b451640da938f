package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/content"
)

// blobs/put without data is a mistake, not an empty blob, and stores nothing.
func TestBlobPutWithoutDataIsRefused(t *testing.T) {
	e := newEnv(t)
	before, err := e.blobs.Usage(bg)
	if err != nil {
		t.Fatal(err)
	}
	for _, params := range []string{`{}`, `{"mediaType":"text/plain"}`, `{"data":null}`} {
		resp := e.postOne(t, `{"jsonrpc":"2.0","id":1,"method":"blobs/put","params":`+params+`}`)
		if resp.Error == nil || resp.Error.Kind() != api.KindInvalidParams || !strings.Contains(resp.Error.Message, "data is required") {
			t.Fatalf("blobs/put %s: %+v, want invalid_params", params, resp)
		}
	}
	if after, err := e.blobs.Usage(bg); err != nil || after != before {
		t.Fatalf("refused puts stored blobs: %+v → %+v, %v", before, after, err)
	}
	resp := e.postOne(t, `{"jsonrpc":"2.0","id":1,"method":"blobs/put","params":{"data":""}}`)
	if resp.Error != nil {
		t.Fatalf(`blobs/put {"data":""} (an empty blob): %+v`, resp.Error)
	}
	if put, err := e.c.PutBlob(bg, nil, "text/plain"); err != nil || put.Ref.Digest != content.Sum(nil) {
		t.Fatalf("the client's empty put: %+v, %v", put, err)
	}
}

// Every method that takes a limit refuses a negative one.
func TestNegativeLimitsAreRefused(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{})
	put, err := e.c.PutBlob(bg, []byte("x"), "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]string{
		api.MethodSessionList:      `{"limit":-1}`,
		api.MethodRunsList:         `{"sessionId":"` + sid + `","limit":-1}`,
		api.MethodEventsRead:       `{"sessionId":"` + sid + `","limit":-1}`,
		api.MethodTranscriptRead:   `{"sessionId":"` + sid + `","limit":-1}`,
		api.MethodCacheReport:      `{"sessionId":"` + sid + `","limit":-1}`,
		api.MethodStorageReport:    `{"limit":-1}`,
		api.MethodBlobsHolders:     `{"ref":"` + put.Ref.Digest.String() + `","limit":-1}`,
		api.MethodWorkspacesList:   `{"limit":-1}`,
		api.MethodWorkspacesCreate: "", // takes no limit: listed so the check below sees every method
	}
	for method, params := range methods {
		if params == "" {
			continue
		}
		resp := e.postOne(t, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
		if resp.Error == nil || resp.Error.Kind() != api.KindInvalidParams || !strings.Contains(resp.Error.Message, "limit") {
			t.Errorf("%s with limit -1: %s, want invalid_params about limit", method, resp.Result)
		}
	}
}

// JSON-RPC 2.0 ids are strings, numbers or null; any other id is an invalid
// request, answered with a null id, and its method does not run.
func TestRequestIDsAreStringsNumbersOrNull(t *testing.T) {
	e := newEnv(t)
	for i, id := range []string{`{}`, `{"a":1}`, `[1]`, `[]`, `true`, `false`} {
		sid := fmt.Sprintf("bad-id-%d", i)
		resp := e.postOne(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"session/create","params":{"sessionId":"`+sid+`","model":{"providerId":"fake","apiKind":"chat_completions","model":"fake-1"}}}`)
		if resp.Error == nil || resp.Error.Kind() != api.KindInvalidRequest || string(resp.ID) != "null" {
			t.Fatalf("id %s: %+v, want invalid_request with id null", id, resp)
		}
		if _, err := e.c.ReadSession(bg, sid); wantKind(t, err, api.KindNotFound) == nil {
			t.Fatalf("id %s: the method ran", id)
		}
	}
	for _, id := range []string{`"a"`, `7`, `-1.5`, `null`} {
		resp := e.postOne(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"session/list"}`)
		if resp.Error != nil || string(resp.ID) != id {
			t.Fatalf("id %s: %+v", id, resp)
		}
	}
}

// Field names match exactly: encoding/json's case-insensitive matching let
// "SESSIONID" through as sessionId, and a second spelling of a field past
// the unknown-field check. Errors name the API's fields, never Go types.
func TestParamsMatchFieldNamesExactly(t *testing.T) {
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{SessionID: "exact"})
	cases := []struct {
		method, params string
		want           string // in the message
	}{
		{api.MethodSessionRead, `{"SESSIONID":"exact"}`, `unknown field "SESSIONID"`},
		{api.MethodSessionRead, `{"sessionId":"exact","SessionId":"other"}`, `unknown field "SessionId"`},
		{api.MethodSessionRead, `{"sessionId":"exact","sessionId":"other"}`, `field "sessionId" appears twice`},
		{api.MethodSessionCreate, `{"sessionId":"nested","model":{"ProviderId":"fake","apiKind":"chat_completions","model":"fake-1"}}`, `unknown field "ProviderId" in model`},
		{api.MethodRunsStart, `{"sessionId":"exact","input":[{"type":"text","Text":"hi"}]}`, `unknown field "Text" in input[0]`},
		{api.MethodSessionRead, `{"sessionId":5}`, `sessionId: expected a string`},
		{api.MethodEventsRead, `{"sessionId":"exact","limit":"ten"}`, `limit: expected an integer`},
		{api.MethodBlobsPut, `{"data":"not base64!"}`, `data: expected base64 data`},
		{api.MethodSessionRead, `["exact"]`, `params: expected an object`},
	}
	for _, tc := range cases {
		before := e.snapshot(t, sid)
		resp := e.postOne(t, `{"jsonrpc":"2.0","id":1,"method":"`+tc.method+`","params":`+tc.params+`}`)
		if resp.Error == nil || resp.Error.Kind() != api.KindInvalidParams {
			t.Fatalf("%s %s: %s %+v, want invalid_params", tc.method, tc.params, resp.Result, resp.Error)
		}
		msg := resp.Error.Message
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s %s: message %q, want it to say %q", tc.method, tc.params, msg, tc.want)
		}
		for _, goWord := range []string{"Go ", "api.", "struct", "[]uint8", "int64", "unmarshal"} {
			if strings.Contains(msg, goWord) {
				t.Errorf("%s %s: message %q speaks Go (%q)", tc.method, tc.params, msg, goWord)
			}
		}
		if after := e.snapshot(t, sid); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("%s %s changed the session", tc.method, tc.params)
		}
	}
	if _, err := e.c.ReadSession(bg, "nested"); wantKind(t, err, api.KindNotFound) == nil {
		t.Fatal("a session/create with a misspelt nested field created its session")
	}
	// The envelope too: JSON-RPC's member names are exact.
	resp := e.postOne(t, `{"jsonrpc":"2.0","id":1,"METHOD":"session/list"}`)
	if resp.Error == nil || resp.Error.Kind() != api.KindInvalidRequest {
		t.Fatalf(`"METHOD": %+v, want invalid_request`, resp)
	}
}
