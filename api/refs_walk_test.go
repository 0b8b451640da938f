package api_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store/sqlite"
)

// refWalk calls methods in one realistic session of use and checks every
// ref their results give.
type refWalk struct {
	t      *testing.T
	e      *env
	called map[string]bool
	refs   map[string]int // refs found per method
}

// call invokes method with params (any JSON-encodable value, refs passed on
// as the previous result gave them), checks the refs of its result, and
// returns the result.
func (w *refWalk) call(method string, params any) map[string]any {
	w.t.Helper()
	var raw json.RawMessage
	if err := w.e.c.Call(bg, method, params, &raw); err != nil {
		w.t.Fatalf("%s: %v\n%s", method, err, w.e.logs.String())
	}
	w.called[method] = true
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		w.t.Fatal(err)
	}
	w.check(method, "", v)
	out, _ := v.(map[string]any)
	return out
}

// check walks a result: every ref object must read back with blobs/read as
// given, and no digest may appear as a bare string, except where the API
// says it is not a ref: blobs/missing's digests (no bytes to read) and the
// raw event payloads (the log's own encoding).
func (w *refWalk) check(method, path string, v any) {
	w.t.Helper()
	switch v := v.(type) {
	case map[string]any:
		if d, ok := v["digest"].(string); ok && content.IsDigestString(d) {
			if _, ok := v["mediaType"].(string); !ok {
				w.t.Errorf("%s: the ref at %s has no mediaType: %v", method, path, v)
			}
			w.readBack(method, path, v, d)
			return
		}
		for k, x := range v {
			if k == "payload" && (method == api.MethodEventsRead || method == api.MethodTranscriptRead) {
				w.checkPayload(method, path+"."+k, x)
				continue
			}
			w.check(method, path+"."+k, x)
		}
	case []any:
		for _, x := range v {
			w.check(method, path+"[]", x)
		}
	case string:
		if content.IsDigestString(v) && !(method == api.MethodBlobsMissing && path == ".missing[]") {
			w.t.Errorf("%s: a bare digest string at %s; results give refs as {digest, mediaType}", method, path)
		}
	}
}

// checkPayload reads back the ref objects of a raw event payload.
func (w *refWalk) checkPayload(method, path string, v any) {
	switch v := v.(type) {
	case map[string]any:
		if d, ok := v["digest"].(string); ok && content.IsDigestString(d) {
			w.readBack(method, path, v, d)
			return
		}
		for k, x := range v {
			w.checkPayload(method, path+"."+k, x)
		}
	case []any:
		for _, x := range v {
			w.checkPayload(method, path+"[]", x)
		}
	}
}

// readBack passes a ref object, exactly as a result gave it, to blobs/read.
func (w *refWalk) readBack(method, path string, ref map[string]any, digest string) {
	w.t.Helper()
	var got api.BlobReadResult
	if err := w.e.c.Call(bg, api.MethodBlobsRead, map[string]any{"ref": ref}, &got); err != nil {
		w.t.Errorf("%s: blobs/read of the ref at %s (%v): %v", method, path, ref, err)
		return
	}
	if content.Sum(got.Data).String() != digest || got.Size != int64(len(got.Data)) {
		w.t.Errorf("%s: the ref at %s read back other bytes", method, path)
	}
	w.refs[method]++
}

// newSQLiteEnv is an embedded server as `cairn serve` runs it: SQLite store
// (with storage reports, retention and checkpoints), vfs tools and the fake
// model.
func newSQLiteEnv(t testing.TB) *env {
	t.Helper()
	st, err := sqlite.Open(bg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	model := newFakeModel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	host := local.New(local.Options{Log: st, Blobs: st, Checkpoints: st, Logger: quiet,
		Executor: &runtime.Executor{Blobs: st, Adapters: map[string]provider.Adapter{core.APIChatCompletions: model}, Tools: vfsTools(t), Files: st}})
	if err := host.Start(bg); err != nil {
		t.Fatal(err)
	}
	logs := &testenv.Buffer{}
	srv := httptest.NewServer(api.NewServer(host, api.ServerOptions{APIKinds: []string{core.APIChatCompletions},
		Logger: slog.New(slog.NewTextHandler(logs, nil))}).Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(host.Close)
	return &env{c: api.NewClient(srv.URL, nil), url: srv.URL + "/rpc", model: model, logs: logs}
}

// Every ref a result gives is a ref object, and feeding it to blobs/read
// (or to any param naming a blob) works as given: a user passes what one
// method returned to the next.
func TestRefs_EveryResultRefReadsBack(t *testing.T) {
	e := newSQLiteEnv(t)
	w := &refWalk{t: t, e: e, called: map[string]bool{}, refs: map[string]int{}}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

	// Blobs and a tree built from put refs, one passed as an object and
	// one as its digest string.
	notes := w.call(api.MethodBlobsPut, map[string]any{"data": b64("# Notes\nbuy acorns\n"), "mediaType": "text/markdown"})["ref"]
	todo := w.call(api.MethodBlobsPut, map[string]any{"data": b64("acorns"), "mediaType": "text/plain"})["ref"].(map[string]any)
	w.call(api.MethodBlobsRead, map[string]any{"ref": todo["digest"]})
	w.call(api.MethodBlobsMissing, map[string]any{"digests": []any{notes, todo["digest"], content.Sum([]byte("absent")).String()}})
	w.call(api.MethodWorkspacesCommit, map[string]any{"workspace": "w", "files": []any{
		map[string]any{"path": "notes.md", "ref": notes, "size": 19},
		map[string]any{"path": "todo.txt", "ref": todo["digest"], "size": 6},
	}})
	w.call(api.MethodWorkspacesRead, map[string]any{"workspace": "w"})
	w.call(api.MethodWorkspacesList, map[string]any{})
	snap := w.call(api.MethodSnapshotsCreate, map[string]any{"workspace": "w"})["snapshot"]
	w.call(api.MethodSnapshotsRead, map[string]any{"snapshot": snap})
	w.call(api.MethodWorkspacesCreate, map[string]any{"workspace": "from-snap", "snapshot": snap})
	w.call(api.MethodFilesRead, map[string]any{"snapshot": snap, "path": "notes.md"})
	w.call(api.MethodFilesList, map[string]any{"snapshot": snap})
	w.call(api.MethodFilesWrite, map[string]any{"workspace": "w", "path": "more.txt", "data": b64("more")})
	w.call(api.MethodBlobsHolders, map[string]any{"ref": notes})

	// A session linking the snapshot by the ref create returned, with
	// context appended by ref object and by digest string, and a run.
	const skill = "---\nname: notes\ndescription: Read the notes.\n---\nRead notes.md.\n"
	skillRef := w.call(api.MethodBlobsPut, map[string]any{"data": b64(skill), "mediaType": "text/markdown"})["ref"]
	w.call(api.MethodWorkspacesCommit, map[string]any{"workspace": "skills", "files": []any{
		map[string]any{"path": ".cairn/skills/notes/SKILL.md", "ref": skillRef, "size": len(skill)}}})
	created := w.call(api.MethodSessionCreate, map[string]any{"sessionId": "walk", "instructions": "Be brief.",
		"model": map[string]any{"providerId": "fake", "apiKind": core.APIChatCompletions, "model": "fake-1"},
		"links": []any{map[string]any{"mount": "/ref", "snapshot": snap}, map[string]any{"mount": "/work", "workspace": "skills"}}})
	sid := created["sessionId"].(string)
	w.call(api.MethodContextAppend, map[string]any{"sessionId": sid, "kind": core.EntryMessage, "ref": todo})
	w.call(api.MethodContextAppend, map[string]any{"sessionId": sid, "kind": core.EntryMessage, "key": "todo", "ref": todo["digest"]})
	w.call(api.MethodContextRemove, map[string]any{"sessionId": sid, "key": "todo"})
	w.call(api.MethodSkillsActivate, map[string]any{"sessionId": sid, "name": "notes"})
	w.call(api.MethodSkillsDeactivate, map[string]any{"sessionId": sid, "name": "notes"})
	run := w.call(api.MethodRunsStart, map[string]any{"sessionId": sid, "input": []any{map[string]any{"type": "text", "text": "hello"}}})
	e.waitStatus(t, sid, run["runId"].(string), core.StatusCompleted)
	out := w.call(api.MethodRunsRead, map[string]any{"sessionId": sid, "runId": run["runId"]})
	w.call(api.MethodBlobsRead, map[string]any{"ref": out["output"].(map[string]any)["ref"]})
	e.model.mu.Lock()
	e.model.fail = 1
	e.model.mu.Unlock()
	failed := w.call(api.MethodRunsStart, map[string]any{"sessionId": sid, "input": []any{map[string]any{"type": "text", "text": "fail once"}}})
	e.waitStatus(t, sid, failed["runId"].(string), core.StatusFailed)
	retried := w.call(api.MethodRunsRetry, map[string]any{"sessionId": sid, "runId": failed["runId"]})
	e.waitStatus(t, sid, retried["runId"].(string), core.StatusCompleted)
	w.call(api.MethodContextAppend, map[string]any{"sessionId": sid, "kind": core.EntryMessage, "text": "and then?"})
	w.call(api.MethodRunsList, map[string]any{"sessionId": sid})
	w.call(api.MethodContextRead, map[string]any{"sessionId": sid})
	w.call(api.MethodContextDiff, map[string]any{"sessionId": sid, "fromSeq": 0, "toSeq": e.read(t, sid).Head})
	w.call(api.MethodTranscriptRead, map[string]any{"sessionId": sid})
	w.call(api.MethodEventsRead, map[string]any{"sessionId": sid})
	w.call(api.MethodCacheReport, map[string]any{"sessionId": sid})
	w.call(api.MethodSessionRead, map[string]any{"sessionId": sid})
	w.call(api.MethodSessionList, map[string]any{})
	w.call(api.MethodSessionUpdate, map[string]any{"sessionId": sid, "instructions": "Be briefer."})
	w.call(api.MethodStorageReport, map[string]any{})
	fork := w.call(api.MethodSessionFork, map[string]any{"sessionId": sid, "atSeq": 2})
	w.call(api.MethodSessionClone, map[string]any{"sessionId": sid})
	// Steering and cancelling need an active run.
	e.model.setHold(true)
	held := w.call(api.MethodRunsStart, map[string]any{"sessionId": sid, "input": []any{map[string]any{"type": "text", "text": "wait"}}})
	e.model.waitArrived(t, 1)
	w.call(api.MethodRunsSteer, map[string]any{"sessionId": sid, "input": []any{map[string]any{"type": "text", "text": "shorter"}}})
	w.call(api.MethodRunsCancel, map[string]any{"sessionId": sid, "runId": held["runId"]})
	e.waitStatus(t, sid, held["runId"].(string), core.StatusCancelled)
	// A client tool's call, and its result given as the ref blobs/put returned.
	tools := w.call(api.MethodSessionCreate, map[string]any{"sessionId": "walk-tools",
		"model":     map[string]any{"providerId": "fake", "apiKind": core.APIChatCompletions, "model": "fake-1"},
		"tools":     []any{map[string]any{"name": "lookup", "parameters": map[string]any{"type": "object"}}},
		"approvals": map[string]any{"lookup": core.ApprovalAlways}})["sessionId"].(string)
	e.model.setHold(false)
	parked := w.call(api.MethodRunsStart, map[string]any{"sessionId": tools, "input": []any{map[string]any{"type": "text", "text": "use the client tool"}}})
	e.waitStatus(t, tools, parked["runId"].(string), core.StatusAwaitingApproval)
	w.call(api.MethodApprovalsPending, map[string]any{"sessionId": tools})
	w.call(api.MethodApprovalsDecide, map[string]any{"sessionId": tools, "callId": "call_lookup", "approve": true})
	e.waitStatus(t, tools, parked["runId"].(string), core.StatusAwaitingTools)
	w.call(api.MethodToolsPending, map[string]any{"sessionId": tools})
	answer := w.call(api.MethodBlobsPut, map[string]any{"data": b64("ticket 7: open"), "mediaType": "text/plain"})["ref"]
	w.call(api.MethodToolsSubmit, map[string]any{"sessionId": tools, "callId": "call_lookup", "output": answer})
	e.waitStatus(t, tools, parked["runId"].(string), core.StatusCompleted)
	w.call(api.MethodRetentionCollect, map[string]any{"graceMs": 0, "dryRun": true})
	w.call(api.MethodContextCompact, map[string]any{"sessionId": sid})
	w.call(api.MethodSessionClose, map[string]any{"sessionId": fork["sessionId"]})
	w.call(api.MethodSessionDelete, map[string]any{"sessionId": fork["sessionId"]})
	w.call(api.MethodDiscover, map[string]any{})

	for _, m := range api.MethodNames() {
		if !w.called[m] {
			t.Errorf("method %s is not walked: call it above so its refs are checked", m)
		}
	}
	// The methods whose results name blobs did, so the checks above ran.
	for _, m := range []string{api.MethodBlobsPut, api.MethodWorkspacesCommit, api.MethodWorkspacesRead, api.MethodWorkspacesList,
		api.MethodSnapshotsCreate, api.MethodSnapshotsRead, api.MethodWorkspacesCreate, api.MethodFilesRead, api.MethodFilesWrite,
		api.MethodBlobsHolders, api.MethodRunsRead, api.MethodContextRead, api.MethodContextDiff, api.MethodTranscriptRead, api.MethodEventsRead} {
		if w.refs[m] == 0 {
			t.Errorf("%s gave no ref to check", m)
		}
	}
}

// A param naming a blob takes a ref object or its digest string, and a
// wrong one is refused in the API's words, with the field's place.
func TestRefs_ParamErrorsSpeakTheAPI(t *testing.T) {
	e := newEnv(t)
	put, err := e.c.PutBlob(bg, []byte("acorns"), "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	d := put.Ref.Digest.String()
	sid := e.create(t, api.CreateSessionParams{})
	cases := []struct {
		method string
		params string
		want   string
	}{
		{api.MethodBlobsRead, `{"ref":5}`, `ref: expected a digest string or a ref object`},
		{api.MethodBlobsRead, `{"ref":"sha256:12"}`, `ref: invalid digest`},
		{api.MethodBlobsRead, `{"ref":{"mediaType":"text/plain"}}`, `ref: a ref object needs its digest`},
		{api.MethodBlobsRead, `{"ref":{"digest":"` + d + `","mediaType":"text/plain","size":6}}`, `ref: unknown field "size" of the ref object`},
		{api.MethodBlobsRead, `{"ref":{"digest":"` + d + `","MediaType":"text/plain"}}`, `unknown field "MediaType"`},
		{api.MethodBlobsRead, `{"ref":{"digest":7,"mediaType":"text/plain"}}`, `ref: digest: expected a digest string`},
		{api.MethodWorkspacesCommit, `{"workspace":"w","files":[{"path":"a.txt","ref":"` + d + `","size":6},{"path":"b.txt","ref":[],"size":6}]}`, `files[1].ref: expected a digest string or a ref object`},
		{api.MethodWorkspacesCommit, `{"workspace":"w","files":[{"path":"a.txt","ref":"` + d + `","size":6,"mode":1}]}`, `unknown field "mode" in files[0]`},
		{api.MethodRunsStart, `{"sessionId":"` + sid + `","input":[{"type":"audio","ref":"` + d + `","filename":"a.wav"}]}`, `input[0].ref: audio needs its media type`},
		{api.MethodSnapshotsRead, `{"snapshot":{"digest":"` + d + `","mediaType":"text/plain"}}`, `snapshot: a snapshot's ref has media type`},
		{api.MethodSessionCreate, `{"model":{"providerId":"fake","apiKind":"chat_completions","model":"fake-1"},"links":[{"mount":"/x","snapshot":true}]}`, `links[0].snapshot: expected a digest string or a ref object`},
	}
	for _, tc := range cases {
		resp := e.postOne(t, `{"jsonrpc":"2.0","id":1,"method":"`+tc.method+`","params":`+tc.params+`}`)
		if resp.Error == nil || resp.Error.Kind() != api.KindInvalidParams || !strings.Contains(resp.Error.Message, tc.want) {
			t.Errorf("%s %s: %+v, want invalid_params saying %q", tc.method, tc.params, resp.Error, tc.want)
			continue
		}
		if strings.Contains(resp.Error.Message, "Go ") || strings.Contains(resp.Error.Message, "content.") || strings.Contains(resp.Error.Message, "api.") {
			t.Errorf("%s %s: %q speaks Go", tc.method, tc.params, resp.Error.Message)
		}
	}
	// A digest string appended to context is read as plain text.
	got, err := e.c.AppendContext(bg, api.ContextAppendParams{SessionID: sid, Kind: core.EntryMessage, Ref: &api.RefParam{Digest: put.Ref.Digest}})
	if err != nil {
		t.Fatal(err)
	}
	cx := e.context(t, sid)
	if last := cx.Entries[len(cx.Entries)-1]; last.ID != got.EntryID || last.Content != (content.ContentRef{Digest: put.Ref.Digest, MediaType: content.MediaText}) {
		t.Fatalf("the entry appended by digest string: %+v", last)
	}
}
