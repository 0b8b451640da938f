package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
)

// sessionView is a session as the API shows it, for comparing it before and
// after a move.
type sessionView struct {
	Read    api.SessionReadResult
	Tools   []string
	Events  []api.EventView
	Context api.ContextReadResult
	Runs    []api.RunReadResult
}

func viewSession(t *testing.T, c *api.Client, sid string) sessionView {
	t.Helper()
	ctx := context.Background()
	read, err := c.ReadSession(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	cx, err := c.ReadContext(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	v := sessionView{Read: read, Tools: read.Tools, Events: allEvents(t, c, sid), Context: cx}
	runs, err := c.ListRuns(ctx, api.RunsListParams{SessionID: sid, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs.Runs {
		got, err := c.ReadRun(ctx, sid, r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		v.Runs = append(v.Runs, got)
	}
	return v
}

// sameSession fails unless the session reads the same on both servers:
// head, revisions, model, tools, links, every event byte for byte at its
// seq, the context entries with their ids and refs, every run's output.
func sameSession(t *testing.T, what string, a, b *api.Client, sid string) {
	t.Helper()
	before, after := viewSession(t, a, sid), viewSession(t, b, sid)
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("%s: session %s reads otherwise after the move:\nbefore %s\nafter  %s", what, sid, mustJSON(t, before), mustJSON(t, after))
	}
}

// requestAfter fails unless the request made after a move starts with the
// bytes of the last one before it: the same messages, then more, and every
// other field (model, tools, cache key) the same.
func requestAfter(t *testing.T, what string, last, next []byte) {
	t.Helper()
	if !bytes.HasPrefix(messagesPrefix(t, next), messagesPrefix(t, last)) {
		t.Fatalf("%s: the first request after the move does not start with the last one before it\nbefore %s\nafter  %s", what, last, next)
	}
	var a, b map[string]json.RawMessage
	if err := json.Unmarshal(last, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(next, &b); err != nil {
		t.Fatal(err)
	}
	delete(a, "messages")
	delete(b, "messages")
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%s: the request's other fields changed: %s vs %s", what, mustJSON(t, a), mustJSON(t, b))
	}
}

// A session with tool calls and a linked workspace moves from the embedded
// store to a hosted server (PostgreSQL + S3), from there back to an
// embedded one, and from one embedded store to another, with the CLI a
// user types; each time it reads the same and its next request to the
// provider starts with the bytes of the last one before the move.
func TestE2E_SessionsMoveBetweenEmbeddedAndHosted(t *testing.T) {
	pg := testenv.PostgresURL(t)
	s3 := testenv.S3Server(t)
	fake := newFakeChat(t, fakeKey)
	fake.script(
		fakeStep{body: toolCallResponse("chatcmpl-1", "call_1", "vfs_read_file", `{"path":"/work/notes.md"}`)},
		fakeStep{body: textResponse("chatcmpl-2", "Acorn 2.0 adds sync.")},
		fakeStep{body: textResponse("chatcmpl-3", "Acorn 2.0: sync.")},
		fakeStep{body: toolCallResponse("chatcmpl-4a", "call_2", "vfs_read_file", `{"path":"/work/notes.md"}`)},
		fakeStep{body: textResponse("chatcmpl-4", "Moved to hosted.")},
		fakeStep{body: textResponse("chatcmpl-5", "Back on the embedded store.")},
		fakeStep{body: textResponse("chatcmpl-6", "Another embedded store.")},
	)
	dir := t.TempDir()
	cfg := writeProviderConfig(t, dir, fake)
	ctx := context.Background()

	// The embedded server, with a workspace imported from a directory.
	embedded := startServe(t, filepath.Join(dir, "one"), cfg, fakeKey)
	docs := filepath.Join(dir, "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(docs, "notes.md"), bytes.Repeat([]byte("Acorn 2.0 adds sync.\n"), 5000), 0o644); err != nil {
		t.Fatal(err) // over 64 KiB: the hosted store keeps it in S3
	}
	if out, err := runCairn(t, nil, "vfs", "import", docs, "--workspace", "docs", "--addr", embedded.addr); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	c := embedded.client()
	created, err := c.CreateSession(ctx, api.CreateSessionParams{SessionID: "acorn", Model: fakeModel(), Instructions: "Be brief.",
		Tools: []string{"vfs_read_file"}, Links: []api.LinkParam{{Mount: "/work", Workspace: "docs"}}})
	if err != nil {
		t.Fatal(err)
	}
	sid := created.SessionID
	for _, msg := range []string{"What is new in Acorn?", "Shorter."} {
		if out, err := runCairn(t, nil, "chat", "--addr", embedded.addr, "--session", sid, msg); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	if n := len(fake.bodies()); n != 3 {
		t.Fatalf("%d requests before the move", n)
	}
	first := filepath.Join(dir, "acorn.cairn")
	if out, err := runCairn(t, nil, "export", "--addr", embedded.addr, "--out", first, "--session", sid); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	// To the hosted server.
	env := []string{"CAIRN_POSTGRES=" + pg}
	if _, err := runCairn(t, env, "migrate"); err != nil {
		t.Fatal(err)
	}
	key := createUniverse(t, env, "acme")
	hosted := startServeWith(t, []string{"--config", cfg, "--s3-endpoint", s3.Endpoint, "--s3-bucket", s3.Bucket, "--s3-prefix", s3.Prefix},
		append(env, "FAKE_CHAT_KEY="+fakeKey, "AWS_ACCESS_KEY_ID="+s3.AccessKey, "AWS_SECRET_ACCESS_KEY="+s3.SecretKey)...)
	keyed := []string{"CAIRN_API_KEY=" + key}
	out, err := runCairn(t, keyed, "import", first, "--json", "--addr", hosted.addr)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var res api.ImportResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("import --json: %v\n%s", err, out)
	}
	if len(res.Sessions) != 1 || res.Sessions[0].From != sid || res.Sessions[0].To != sid || len(res.Workspaces) != 1 || res.Blobs == 0 || res.Skipped != 0 {
		t.Fatalf("import = %s", out)
	}
	h := hosted.client().WithAPIKey(key)
	sameSession(t, "embedded → hosted", c, h, sid)
	before := fake.bodies()[2]
	if out, err := runCairn(t, keyed, "chat", "--addr", hosted.addr, "--session", sid, "Now on the hosted stack?"); err != nil || !strings.Contains(out, "Moved to hosted.") {
		t.Fatalf("chat after the move: %v\n%s", err, out)
	}
	requestAfter(t, "embedded → hosted", before, fake.bodies()[3])
	// The link resolves to the imported workspace: the model read the file.
	type message struct {
		ToolCallID string `json:"tool_call_id"`
		Content    string `json:"content"`
	}
	var read struct {
		Messages []message `json:"messages"`
	}
	if err := json.Unmarshal(fake.bodies()[4], &read); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(read.Messages, func(m message) bool { return m.ToolCallID == "call_2" })
	if i < 0 || !strings.Contains(read.Messages[i].Content, "Acorn 2.0 adds sync.\nAcorn 2.0 adds sync.") {
		t.Fatalf("the read after the move did not return the workspace's file: %.600s", fake.bodies()[4])
	}
	// The same archive again sends nothing.
	out, err = runCairn(t, keyed, "import", first, "--json", "--new-ids", "--addr", hosted.addr)
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.Blobs != 0 || res.Bytes != 0 || !res.Workspaces[0].Reused {
		t.Fatalf("second import: %v\n%s", err, out)
	}

	// Back to an embedded store.
	second := filepath.Join(dir, "hosted.cairn")
	if out, err := runCairn(t, keyed, "export", "--addr", hosted.addr, "--out", second, "--session", sid); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	noCredentials(t, second, key, fakeKey)
	back := startServe(t, filepath.Join(dir, "two"), cfg, fakeKey)
	if out, err := runCairn(t, nil, "import", second, "--addr", back.addr); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sameSession(t, "hosted → embedded", h, back.client(), sid)
	if out, err := runCairn(t, nil, "chat", "--addr", back.addr, "--session", sid, "And back?"); err != nil || !strings.Contains(out, "Back on the embedded store.") {
		t.Fatalf("chat after the move back: %v\n%s", err, out)
	}
	requestAfter(t, "hosted → embedded", fake.bodies()[4], fake.bodies()[5])

	// From one embedded store to another, the first archive.
	third := startServe(t, filepath.Join(dir, "three"), cfg, fakeKey)
	if out, err := runCairn(t, nil, "import", first, "--addr", third.addr); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sameSession(t, "embedded → embedded", c, third.client(), sid)
	if out, err := runCairn(t, nil, "chat", "--addr", third.addr, "--session", sid, "Elsewhere?"); err != nil || !strings.Contains(out, "Another embedded store.") {
		t.Fatalf("chat after the third move: %v\n%s", err, out)
	}
	requestAfter(t, "embedded → embedded", before, fake.bodies()[6])
	if got := waitRun(t, third.client(), sid, lastRun(t, third.client(), sid)); got.Status != core.StatusCompleted {
		t.Fatalf("run after the third move = %s", mustJSON(t, got))
	}

	// Through a pipe: export to stdout, import from stdin, under new ids.
	export := exec.Command(cairnBin, "export", "--out", "-", "--session", sid, "--addr", hosted.addr)
	export.Env = append(os.Environ(), keyed...)
	importer := exec.Command(cairnBin, "import", "-", "--new-ids", "--json", "--addr", third.addr)
	pipe, err := export.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	importer.Stdin = pipe
	var piped bytes.Buffer
	importer.Stdout = &piped
	if err := export.Start(); err != nil {
		t.Fatal(err)
	}
	if err := importer.Run(); err != nil {
		t.Fatal(err)
	}
	if err := export.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(piped.Bytes(), &res); err != nil || len(res.Sessions) != 1 || res.Sessions[0].To == sid {
		t.Fatalf("piped import: %v %s", err, piped.String())
	}
	if got, want := allEvents(t, third.client(), res.Sessions[0].To), allEvents(t, h, sid); !reflect.DeepEqual(got, want) {
		t.Fatal("the piped session has other events")
	}
}

func lastRun(t *testing.T, c *api.Client, sid string) string {
	t.Helper()
	runs, err := c.ListRuns(context.Background(), api.RunsListParams{SessionID: sid, Limit: 1})
	if err != nil || len(runs.Runs) == 0 {
		t.Fatalf("runs of %s: %v", sid, err)
	}
	return runs.Runs[0].RunID
}

// On the Temporal host an imported session is like any other: its next
// run goes to a worker, which rehydrates it from its log.
func TestE2E_TemporalRunsAnImportedSession(t *testing.T) {
	fake := newFakeChat(t, fakeKey)
	fake.script(
		fakeStep{body: textResponse("chatcmpl-1", "Drafted.")},
		fakeStep{body: textResponse("chatcmpl-2", "On a worker now.")},
	)
	dir := t.TempDir()
	embedded := startServe(t, filepath.Join(dir, "data"), writeProviderConfig(t, dir, fake), fakeKey)
	if out, err := runCairn(t, nil, "chat", "--addr", embedded.addr, "--provider", "fake", "--model", "fake-model", "--instructions", "Be brief.", "Draft the notes."); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sessions, err := embedded.client().ListSessions(context.Background(), api.SessionListParams{})
	if err != nil || len(sessions.Sessions) != 1 {
		t.Fatalf("sessions: %v %+v", err, sessions)
	}
	sid := sessions.Sessions[0].SessionID
	file := filepath.Join(dir, "s.cairn")
	if out, err := runCairn(t, nil, "export", "--addr", embedded.addr, "--out", file); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	d := newTemporalDeployment(t, fake)
	d.startWorker(t, "worker-1", cairnBin)
	keyed := []string{"CAIRN_API_KEY=" + d.key}
	if out, err := runCairn(t, keyed, "import", file, "--addr", d.srv.addr); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	before, after := viewSession(t, embedded.client(), sid), viewSession(t, d.client(), sid)
	after.Read.AsOfSeq = 0 // answered from the store before any workflow ran: as of its head
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("session %s on Temporal reads otherwise:\nbefore %s\nafter  %s", sid, mustJSON(t, before), mustJSON(t, after))
	}
	if out, err := runCairn(t, keyed, "chat", "--addr", d.srv.addr, "--session", sid, "Go on."); err != nil || !strings.Contains(out, "On a worker now.") {
		t.Fatalf("chat on Temporal: %v\n%s", err, out)
	}
	requestAfter(t, "embedded → Temporal", fake.bodies()[0], fake.bodies()[1])
	if acts := d.activityTypes(t, sid); !slices.Contains(acts, "Generate") {
		t.Fatalf("the run's activities: %v", acts)
	}
}

// noCredentials fails if an archive holds any of the secrets, anywhere in
// its decompressed bytes.
func noCredentials(t *testing.T, path string, secrets ...string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if bytes.Contains(data, []byte(s)) {
			t.Fatalf("the archive holds a credential (%d bytes of it)", len(s))
		}
	}
}

// A session exported in the middle of a model call goes on with that run
// once imported on the Temporal host: its workflow starts at the import,
// rehydrates from the log, and asks the model again.
func TestE2E_TemporalResumesAnImportedRun(t *testing.T) {
	fake := newFakeChat(t, fakeKey)
	held := make(chan struct{})
	fake.script(
		fakeStep{body: textResponse("chatcmpl-1", "Too late."), release: held},
		fakeStep{body: textResponse("chatcmpl-2", "Finished on a worker.")},
	)
	defer close(held)
	dir := t.TempDir()
	embedded := startServe(t, filepath.Join(dir, "data"), writeProviderConfig(t, dir, fake), fakeKey)
	c := embedded.client()
	ctx := context.Background()
	created, err := c.CreateSession(ctx, api.CreateSessionParams{SessionID: "busy", Model: fakeModel()})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.StartRun(ctx, api.RunStartParams{SessionID: created.SessionID, Input: textInput("Take your time.")})
	if err != nil {
		t.Fatal(err)
	}
	waitArrived(t, fake, 0) // the model call is in flight
	file := filepath.Join(dir, "busy.cairn")
	if out, err := runCairn(t, nil, "export", "--addr", embedded.addr, "--out", file); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	embedded.kill(t) // the source stops: this is a move

	d := newTemporalDeployment(t, fake)
	d.startWorker(t, "worker-1", cairnBin)
	if out, err := runCairn(t, []string{"CAIRN_API_KEY=" + d.key}, "import", file, "--addr", d.srv.addr); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := waitRun(t, d.client(), created.SessionID, run.RunID)
	if got.Status != core.StatusCompleted || got.Output.VisibleText() != "Finished on a worker." {
		t.Fatalf("the moved run = %s", mustJSON(t, got))
	}
}

// An import whose server dies (SIGKILL) half way through the archive
// leaves nothing: after a restart the universe has no session and no
// workspace of it, and the same archive then imports whole.
func TestE2E_ImportCutByAKilledServerLeavesNothing(t *testing.T) {
	fake := newFakeChat(t, fakeKey)
	fake.script(fakeStep{body: textResponse("chatcmpl-1", "Noted.")})
	dir := t.TempDir()
	cfg := writeProviderConfig(t, dir, fake)
	from := startServe(t, filepath.Join(dir, "from"), cfg, fakeKey)
	files := filepath.Join(dir, "files")
	if err := os.MkdirAll(files, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 8 { // incompressible, so the archive is as large as they are
		data := make([]byte, 1<<20)
		for j := range data {
			data[j] = byte((i*7919 + j*31 + j/251) ^ (j >> 3))
		}
		if err := os.WriteFile(filepath.Join(files, fmt.Sprintf("part-%d.bin", i)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := runCairn(t, nil, "vfs", "import", files, "--workspace", "data", "--addr", from.addr); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ctx := context.Background()
	created, err := from.client().CreateSession(ctx, api.CreateSessionParams{SessionID: "kept", Model: fakeModel(), Links: []api.LinkParam{{Mount: "/data", Workspace: "data"}}})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := runCairn(t, nil, "chat", "--addr", from.addr, "--session", created.SessionID, "Keep this."); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	file := filepath.Join(dir, "kept.cairn")
	if out, err := runCairn(t, nil, "export", "--addr", from.addr, "--out", file); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	archive, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}

	target := filepath.Join(dir, "to")
	to := startServe(t, target, cfg, fakeKey)
	importer := exec.Command(cairnBin, "import", "-", "--addr", to.addr)
	stdin, err := importer.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	importer.Stdout, importer.Stderr = &out, &out
	if err := importer.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write(archive[:len(archive)/2]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the first blobs reach the server
	to.kill(t)
	stdin.Close()
	if err := importer.Wait(); err == nil {
		t.Fatalf("the import went on without its server: %s", out.String())
	}

	again := startServe(t, target, cfg, fakeKey)
	c := again.client()
	if list, err := c.ListSessions(ctx, api.SessionListParams{}); err != nil || len(list.Sessions) != 0 {
		t.Fatalf("after the cut import: sessions %+v, %v", list.Sessions, err)
	}
	if ws, err := c.ListWorkspaces(ctx, api.WorkspaceListParams{}); err != nil || len(ws.Workspaces) != 0 {
		t.Fatalf("after the cut import: workspaces %+v, %v", ws, err)
	}
	if out, err := runCairn(t, nil, "import", file, "--addr", again.addr); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sameSession(t, "after a cut import", from.client(), c, created.SessionID)
}
