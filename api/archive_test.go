package api_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/archive"
	"github.com/cairn-agents/cairn/core"
)

// moved is what a session looks like through the API, for comparing a
// session before and after a move.
type moved struct {
	Read    api.SessionReadResult
	Tools   []string
	Events  []api.EventView
	Context api.ContextReadResult
	Runs    []api.RunReadResult
}

func (e *env) moved(t *testing.T, sid string) moved {
	t.Helper()
	m := moved{Read: e.read(t, sid), Events: e.events(t, sid), Context: e.context(t, sid)}
	m.Tools = m.Read.Tools
	runs, err := e.c.ListRuns(bg, api.RunsListParams{SessionID: sid, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs.Runs {
		got, err := e.c.ReadRun(bg, sid, r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		m.Runs = append(m.Runs, got)
	}
	return m
}

func (e *env) export(t *testing.T, p api.ExportParams) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := e.c.Export(bg, p, &buf); err != nil {
		t.Fatalf("export %+v: %v", p, err)
	}
	return buf.Bytes()
}

// universe is what a refused import must leave as it was.
func (e *env) universe(t *testing.T) string {
	t.Helper()
	sessions, err := e.c.ListSessions(bg, api.SessionListParams{})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := e.c.ListWorkspaces(bg, api.WorkspaceListParams{})
	if err != nil {
		t.Fatal(err)
	}
	var heads []int64
	for _, s := range sessions.Sessions {
		heads = append(heads, e.read(t, s.SessionID).Head)
	}
	out, _ := json.Marshal([]any{sessions.Sessions, ws, heads})
	return string(out)
}

// source builds a universe with a workspace, a session linked to it with
// two runs, a history fork with a run of its own, and a clone.
func source(t *testing.T) (*env, string, string, string) {
	e := newEnv(t)
	if _, err := e.c.CreateWorkspace(bg, api.WorkspaceCreateParams{Workspace: "docs"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.WriteFile(bg, api.FileWriteParams{Workspace: "docs", Path: "/notes.md", Data: []byte("# Acorn\nrelease notes\n")}); err != nil {
		t.Fatal(err)
	}
	sid := e.create(t, api.CreateSessionParams{SessionID: "acorn", Tools: []string{"vfs_read_file"},
		Links: []api.LinkParam{{Mount: "/work", Workspace: "docs"}}})
	e.run(t, sid, "draft the notes")
	e.run(t, sid, "shorter")
	fork := e.fork(t, api.SessionForkParams{SessionID: sid, NewSessionID: "acorn-alt"}).SessionID
	e.run(t, fork, "in French")
	e.run(t, sid, "ship it") // after the fork point: the fork must not see it
	clone, err := e.c.CloneSession(bg, api.SessionCloneParams{SessionID: sid, NewSessionID: "acorn-clone"})
	if err != nil {
		t.Fatal(err)
	}
	// A fork with no events of its own, and a fork of the fork at a point
	// in the prefix it inherits.
	e.fork(t, api.SessionForkParams{SessionID: sid, NewSessionID: "acorn-idle"})
	inherited := e.read(t, fork).Source.AtSeq
	e.fork(t, api.SessionForkParams{SessionID: fork, NewSessionID: "acorn-early", AtSeq: &inherited})
	return e, sid, fork, clone.SessionID
}

// A whole universe moves: every session reads the same (head, revisions,
// model, tools, events byte for byte, context entries, runs' outputs,
// lineage), the workspace comes along at its head, and a second import of
// the same archive sends no blob.
func TestArchive_UniverseMovesAsItWas(t *testing.T) {
	from, sid, fork, clone := source(t)
	data := from.export(t, api.ExportParams{})
	to := newEnv(t)
	res, err := to.c.Import(bg, bytes.NewReader(data), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sessions) != 5 || res.Blobs == 0 || res.Bytes == 0 || res.Skipped != 0 || len(res.Workspaces) != 1 || res.Workspaces[0].Reused {
		t.Fatalf("import = %+v", res)
	}
	for _, id := range []string{sid, fork, clone, "acorn-idle", "acorn-early"} {
		before, after := from.moved(t, id), to.moved(t, id)
		if !reflect.DeepEqual(before, after) {
			a, _ := json.Marshal(before)
			b, _ := json.Marshal(after)
			t.Fatalf("session %s after the move:\n%s\nbefore:\n%s", id, b, a)
		}
	}
	// The listing too: titles, lineage marks, heads, times.
	listed := func(e *env) string {
		l, err := e.c.ListSessions(bg, api.SessionListParams{})
		if err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(l.Sessions)
		return string(out)
	}
	if a, b := listed(from), listed(to); a != b {
		t.Fatalf("session/list after the move:\n%s\nbefore:\n%s", b, a)
	}
	if got := to.read(t, fork).Source; got == nil || got.SessionID != sid || got.AtSeq == 0 {
		t.Fatalf("fork lineage = %+v", got)
	}
	file, err := to.c.ReadFile(bg, api.FileParams{Workspace: "docs", Path: "/notes.md"})
	if err != nil || !strings.Contains(string(file.Data), "release notes") {
		t.Fatalf("workspace file = %+v, %v", file, err)
	}
	// The moved session goes on: its next run sees the whole conversation.
	to.run(t, sid, "one more")
	if got := userTexts(to.context(t, sid).Entries); len(got) != 4 {
		t.Fatalf("user messages after the move = %q", got)
	}

	// Again, under new ids: nothing is sent, lineage follows the mapping.
	again, err := to.c.Import(bg, bytes.NewReader(data), true)
	if err != nil {
		t.Fatal(err)
	}
	if again.Blobs != 0 || again.Bytes != 0 || again.Skipped != res.Blobs || !again.Workspaces[0].Reused {
		t.Fatalf("second import = %+v", again)
	}
	ids := map[string]string{}
	for _, s := range again.Sessions {
		ids[s.From] = s.To
	}
	if src := to.read(t, ids[fork]).Source; src == nil || src.SessionID != ids[sid] {
		t.Fatalf("mapped fork lineage = %+v", src)
	}
	if got, want := to.events(t, ids[fork]), from.events(t, fork); !reflect.DeepEqual(got, want) {
		t.Fatal("the fork under a new id has other events")
	}
}

// A fork exported without its source carries the inherited prefix and
// reads the same; exported with it, it keeps its lineage.
func TestArchive_ForkAloneAndWithItsSource(t *testing.T) {
	from, sid, fork, _ := source(t)
	alone := newEnv(t)
	if _, err := alone.c.Import(bg, bytes.NewReader(from.export(t, api.ExportParams{Sessions: []string{fork}})), false); err != nil {
		t.Fatal(err)
	}
	before, after := from.moved(t, fork), alone.moved(t, fork)
	if after.Read.Source != nil {
		t.Fatalf("a fork moved alone has lineage %+v", after.Read.Source)
	}
	before.Read.Source = nil
	if !reflect.DeepEqual(before, after) {
		t.Fatal("the fork moved alone reads otherwise")
	}
	if _, err := alone.c.ReadSession(bg, sid); err == nil {
		t.Fatal("the source came along")
	}
	alone.run(t, fork, "go on") // it is a whole session

	both := newEnv(t)
	if _, err := both.c.Import(bg, bytes.NewReader(from.export(t, api.ExportParams{Sessions: []string{fork, sid}})), false); err != nil {
		t.Fatal(err)
	}
	if got := both.moved(t, fork); !reflect.DeepEqual(got, from.moved(t, fork)) {
		t.Fatal("the fork moved with its source reads otherwise")
	}
}

// rewriteArchive decodes an archive, lets edit change or drop (nil) each
// entry, and encodes it again: what a damaged disk or an attacker makes.
func rewriteArchive(t *testing.T, data []byte, edit func(name string, body []byte) []byte) []byte {
	t.Helper()
	zr, err := zstd.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var out bytes.Buffer
	zw, _ := zstd.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		if body = edit(h.Name, body); body == nil {
			continue
		}
		h.Size = int64(len(body))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write(body)
	}
	tw.Close()
	zw.Close()
	return out.Bytes()
}

// postArchive sends an archive to /import as is, past the client's checks.
func postArchive(t *testing.T, e *env, data []byte) *api.Error {
	t.Helper()
	resp, err := http.Post(strings.TrimSuffix(e.url, "/rpc")+api.ImportPath, api.ArchiveMediaType, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out api.Response
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Error == nil {
		t.Fatalf("HTTP %d: imported", resp.StatusCode)
	}
	return out.Error
}

// Every refusal is typed, names what failed, and leaves the target as it
// was: no session, no workspace, no head moved. Each archive is refused
// by the server (sent as is) and by the client (which reads it first).
func TestArchive_RefusalsChangeNothing(t *testing.T) {
	from, sid, _, _ := source(t)
	good := from.export(t, api.ExportParams{Sessions: []string{sid}})
	var firstBlob string
	lines := func(body []byte) []string { return strings.SplitAfter(string(body), "\n") }
	cases := map[string]struct {
		data []byte
		kind string
	}{
		"tampered blob": {rewriteArchive(t, good, func(name string, body []byte) []byte {
			if strings.HasPrefix(name, "blobs/") && firstBlob == "" {
				firstBlob = name
				body = append([]byte{}, body...)
				body[0] ^= 0x20
			}
			return body
		}), archive.KindBlobMismatch},
		"missing blob": {rewriteArchive(t, good, func(name string, body []byte) []byte {
			if name == firstBlob {
				return nil
			}
			return body
		}), archive.KindBlobMissing},
		"truncated stream": {good[:len(good)*2/3], archive.KindTruncated},
		"gap in events": {rewriteArchive(t, good, func(name string, body []byte) []byte {
			if strings.HasPrefix(name, "sessions/") {
				l := lines(body)
				return []byte(strings.Join(append(l[:2:2], l[3:]...), ""))
			}
			return body
		}), archive.KindEventsGap},
		"events that do not replay": {rewriteArchive(t, good, func(name string, body []byte) []byte {
			if strings.HasPrefix(name, "sessions/") {
				return bytes.Replace(body, []byte(`"baseRevision":0`), []byte(`"baseRevision":7`), 1)
			}
			return body
		}), archive.KindInvalid},
		"newer major version": {rewriteArchive(t, good, func(name string, body []byte) []byte {
			if name == archive.ManifestName {
				return bytes.Replace(body, []byte(`"version":"1.0"`), []byte(`"version":"2.0"`), 1)
			}
			return body
		}), archive.KindVersion},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			to := newEnv(t)
			before := to.universe(t)
			if got := postArchive(t, to, c.data); got.Kind() != c.kind {
				t.Fatalf("server: %v, want %s", got, c.kind)
			}
			if name != "missing blob" && name != "events that do not replay" { // the client sends only what is missing, and does not replay
				_, err := to.c.Import(bg, bytes.NewReader(c.data), false)
				var refused *archive.Error
				if !errors.As(err, &refused) || refused.Kind != c.kind {
					t.Fatalf("client: %v, want %s", err, c.kind)
				}
			}
			if after := to.universe(t); after != before {
				t.Fatalf("the refused import changed the target:\n%s\n%s", before, after)
			}
		})
	}

	t.Run("id clash", func(t *testing.T) {
		to := newEnv(t)
		if _, err := to.c.Import(bg, bytes.NewReader(good), false); err != nil {
			t.Fatal(err)
		}
		to.run(t, sid, "moved on here")
		before := to.universe(t)
		_, err := to.c.Import(bg, bytes.NewReader(good), false)
		if wantKind(t, err, "session_exists"); to.universe(t) != before {
			t.Fatal("a refused clash changed the target")
		}
	})
	t.Run("workspace at another head", func(t *testing.T) {
		to := newEnv(t)
		if _, err := to.c.CreateWorkspace(bg, api.WorkspaceCreateParams{Workspace: "docs"}); err != nil {
			t.Fatal(err)
		}
		before := to.universe(t)
		_, err := to.c.Import(bg, bytes.NewReader(good), false)
		if wantKind(t, err, api.KindWorkspaceExists); to.universe(t) != before {
			t.Fatal("a refused clash changed the target")
		}
	})
}

// Export and import speak only to whom /rpc speaks to, in the media types
// a page of another origin cannot send unasked.
func TestArchive_EndpointsRefuseWhatRPCRefuses(t *testing.T) {
	e := newEnv(t)
	base := strings.TrimSuffix(e.url, "/rpc")
	for _, c := range []struct{ path, ctype string }{
		{api.ExportPath, "text/plain"}, {api.ImportPath, "application/x-www-form-urlencoded"}, {api.ImportPath, "application/json"},
	} {
		resp, err := http.Post(base+c.path, c.ctype, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Errorf("%s as %s: HTTP %d", c.path, c.ctype, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, base+api.ExportPath, strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a foreign origin's export: HTTP %d", resp.StatusCode)
	}
}

// An export that fails once its answer has begun is cut off, and the
// client says so instead of keeping a short archive.
func TestArchive_ExportCutOffIsAnError(t *testing.T) {
	e, sid, _, _ := source(t)
	e.blobs.failGets.Store(true)
	var buf bytes.Buffer
	_, err := e.c.Export(bg, api.ExportParams{Sessions: []string{sid}}, &buf)
	if !errors.Is(err, api.ErrExportCut) {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), secretDetail) {
		t.Fatal("the store's failure reached the client")
	}
	to := newEnv(t)
	if _, err := to.c.Import(bg, bytes.NewReader(buf.Bytes()), false); err == nil {
		t.Fatal("what a cut export wrote imports")
	}
}

// A session exported during a run is taken up to its last committed event,
// and its run goes on where it was once imported, as after a crash.
func TestArchive_ARunInProgressGoesOnAfterTheMove(t *testing.T) {
	from := newEnv(t)
	sid := from.create(t, api.CreateSessionParams{SessionID: "busy"})
	from.model.setHold(true)
	run := from.start(t, sid, "take your time")
	<-from.model.arrived // the model call is in flight
	headThen := from.read(t, sid).Head
	data := from.export(t, api.ExportParams{})
	from.model.release <- struct{}{}
	from.waitStatus(t, sid, run.RunID, core.StatusCompleted)

	to := newEnv(t)
	if _, err := to.c.Import(bg, bytes.NewReader(data), false); err != nil {
		t.Fatal(err)
	}
	got := to.waitStatus(t, sid, run.RunID, core.StatusCompleted)
	if got.Output == nil || got.Output.VisibleText() != "echo: take your time" {
		t.Fatalf("the moved run = %+v", got)
	}
	if calls := to.model.calls(); calls != 1 {
		t.Fatalf("%d model calls after the move", calls)
	}
	if evs := to.events(t, sid); !reflect.DeepEqual(evs[:headThen], from.events(t, sid)[:headThen]) {
		t.Fatal("the moved session's events up to the export differ")
	}
}
