package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/vfs"
)

// fuzzMethods take refs, paths or media types in their params.
var fuzzMethods = []string{
	api.MethodBlobsPut, api.MethodBlobsRead, api.MethodBlobsMissing, "blobs/holders",
	api.MethodSessionCreate, api.MethodRunsStart, api.MethodContextAppend, api.MethodContextRead,
	"vfs/workspaces/create", "vfs/workspaces/commit", "vfs/snapshots/read",
	"vfs/files/read", "vfs/files/list", "vfs/files/write",
}

// fuzzClient gives up on a call that hangs, so a hang is a finding too.
var fuzzClient = &http.Client{Timeout: 20 * time.Second}

// FuzzParams sends arbitrary params to the methods that take refs, paths or
// media types. Whatever the bytes, the answer is one well-formed JSON-RPC
// response, and never an internal error: bad input is a typed error.
// scripts/test runs it with -fuzz for a bounded time.
func FuzzParams(f *testing.F) {
	e := newSQLiteEnv(f) // the embedded server users run
	ref, err := e.c.PutBlob(bg, []byte("hello"), "text/plain; charset=utf-8")
	if err != nil {
		f.Fatal(err)
	}
	if _, err := e.c.CommitWorkspace(bg, api.WorkspaceCommitParams{Workspace: "w", Files: api.CommitFiles([]vfs.Entry{{Path: "a.txt", Ref: ref.Ref, Size: 5}})}); err != nil {
		f.Fatal(err)
	}
	created, err := e.c.CreateSession(bg, api.CreateSessionParams{SessionID: "s1", Model: testModel()})
	if err != nil {
		f.Fatal(err)
	}
	sid := created.SessionID
	d := ref.Ref.Digest.String()
	obj := `{"digest":"` + d + `","mediaType":"text/plain; charset=utf-8"}`
	zero := "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	seeds := map[string][]string{
		api.MethodBlobsPut:      {`{"data":"aGk=","mediaType":"image/svg+xml"}`, `{"data":"aGk=","mediaType":"text/plain\r\nX: y"}`, `{}`},
		api.MethodBlobsRead:     {`{"ref":"` + d + `"}`, `{"ref":` + obj + `,"offset":2,"length":9}`, `{"ref":"` + zero + `"}`, `{"ref":{"digest":"` + d + `","mediaType":"a"}}`},
		api.MethodBlobsMissing:  {`{"digests":["` + d + `","` + zero + `",` + obj + `]}`},
		"blobs/holders":         {`{"ref":` + obj + `}`},
		api.MethodSessionCreate: {`{"model":{"providerId":"fake","apiKind":"chat_completions","model":"m"},"links":[{"mount":"/","workspace":"w"},{"mount":"/s","snapshot":"` + d + `"}]}`},
		api.MethodRunsStart:     {`{"sessionId":"` + sid + `","input":[{"type":"audio","ref":` + obj + `,"filename":"../x.wav"}]}`},
		api.MethodContextAppend: {`{"sessionId":"` + sid + `","kind":"message","ref":` + obj + `}`, `{"sessionId":"` + sid + `","kind":"message","text":"` + zero + `"}`},
		api.MethodContextRead:   {`{"sessionId":"` + sid + `","atSeq":-1}`, `{"sessionId":"` + sid + `","after":"e1","limit":1001}`},
		"vfs/workspaces/create": {`{"workspace":"x/../y","snapshot":"` + d + `"}`},
		"vfs/workspaces/commit": {`{"workspace":"w","files":[{"path":"../etc/passwd","ref":"` + d + `","size":5}]}`, `{"workspace":"w","files":[{"path":".git/config","ref":` + obj + `,"size":-1}]}`},
		"vfs/snapshots/read":    {`{"snapshot":` + obj + `}`},
		"vfs/files/read":        {`{"workspace":"w","path":"a.txt/.."}`, `{"snapshot":"` + d + `","path":"a.txt"}`},
		"vfs/files/list":        {`{"workspace":"w","path":".."}`, `{"workspace":"w","path":"//"}`},
		"vfs/files/write":       {`{"workspace":"w","path":"b/` + string(bytes.Repeat([]byte("x"), 300)) + `","data":"aGk="}`},
	}
	for i, m := range fuzzMethods {
		for _, s := range seeds[m] {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, method uint8, params []byte) {
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": m})
		if json.Valid(params) {
			body = append(body[:len(body)-1], []byte(`,"params":`+string(params)+`}`)...)
		}
		resp, err := fuzzClient.Post(e.url, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var out api.Response
		if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &out) != nil || out.JSONRPC != "2.0" {
			t.Fatalf("%s %s: HTTP %d %s", m, params, resp.StatusCode, data)
		}
		if out.Error != nil && (out.Error.Kind() == api.KindInternal || out.Error.Code == api.CodeInternal) {
			t.Fatalf("%s %s: internal error %s", m, params, out.Error.Message)
		}
	})
}
