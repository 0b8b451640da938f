package local

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/transcribe"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

var memoBytes = []byte("\x00\x00\x00\x20ftypM4A fake memo audio")

// whisperServer is a fake OpenAI-compatible transcription endpoint that
// answers with the statuses and bodies of replies in turn (the last repeats).
type whisperServer struct {
	mu      sync.Mutex
	files   [][]byte
	names   []string
	models  []string
	replies []reply
}

type reply struct {
	status int
	body   string
}

func (ws *whisperServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if r.URL.Path != "/v1/audio/transcriptions" || r.Header.Get("Authorization") != "Bearer sk-whisper" || r.ParseMultipartForm(1<<20) != nil {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"unexpected request"}}`)
		return
	}
	if fhs := r.MultipartForm.File["file"]; len(fhs) == 1 {
		f, _ := fhs[0].Open()
		data, _ := io.ReadAll(f)
		ws.files, ws.names = append(ws.files, data), append(ws.names, fhs[0].Filename)
	}
	ws.models = append(ws.models, r.FormValue("model"))
	rep := ws.replies[min(len(ws.files)-1, len(ws.replies)-1)]
	w.WriteHeader(rep.status)
	io.WriteString(w, rep.body)
}

// transcribingEnv is a host whose executor transcribes through the fake
// server and whose scripted adapter records the Chat Completions body each
// request lowers to.
func transcribingEnv(t *testing.T, replies ...reply) (*env, *whisperServer, *[]string) {
	t.Helper()
	ws := &whisperServer{replies: replies}
	srv := httptest.NewServer(ws)
	t.Cleanup(srv.Close)
	var bodies []string
	var mu sync.Mutex
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, req provider.Request) (provider.Output, error) {
		body, err := chat.Lower(ctx, b, req, chat.LowerOptions{})
		if err != nil {
			return provider.Output{}, err
		}
		mu.Lock()
		bodies = append(bodies, string(body))
		mu.Unlock()
		return answer(ctx, b, "noted")
	}}
	blobs := blob.NewMemory()
	e := &env{t: t, blobs: blobs, log: store.NewMemory(blobs), adapter: adapter}
	res := endpoint.Static{"openai": {BaseURL: srv.URL + "/v1", APIKey: "sk-whisper", APIKinds: []string{core.APIChatCompletions}}}
	e.host = New(Options{
		Log: e.log, Blobs: blobs,
		Executor: &runtime.Executor{Blobs: blobs, Adapters: map[string]provider.Adapter{core.APIChatCompletions: adapter},
			Transcriber: transcribe.New(res, srv.Client())},
		Retry: RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
	})
	if err := e.host.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.host.Close)
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "test", APIKind: core.APIChatCompletions, Model: "m"},
		Transcription: &core.Transcription{ProviderID: "openai", Model: "whisper-1"}}
	if _, err := e.host.CreateSession(context.Background(), "s1", cfg, nil); err != nil {
		t.Fatal(err)
	}
	return e, ws, &bodies
}

func (e *env) startAudioRun(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ref, err := blob.PutRef(ctx, e.blobs, memoBytes, "audio/mp4", "")
	if err != nil {
		t.Fatal(err)
	}
	text, err := runtime.TextInput(ctx, e.blobs, "what does the memo say?")
	if err != nil {
		t.Fatal(err)
	}
	audio := core.InputItem{Kind: core.InputAudio, Filename: "memo.m4a", Content: ref, Preview: "[audio memo.m4a]"}
	adm, err := e.host.Submit(ctx, "s1", core.StartRun{AtMs: 1, RunID: "run_audio", Input: []core.InputItem{text, audio}})
	if err != nil {
		t.Fatal(err)
	}
	return adm.RunID
}

// The model's request carries the transcript, labelled with the file name,
// where the audio stood in the input; a retryable transcription error is
// retried like a generation's.
func TestHost_AudioInputReachesTheModelAsALabelledTranscript(t *testing.T) {
	e, ws, bodies := transcribingEnv(t, reply{503, `{"error":{"message":"busy"}}`}, reply{200, `{"text":"Buy acorns on Friday."}`})
	run := e.waitRun("s1", e.startAudioRun(t))
	if run.Status != core.StatusCompleted {
		t.Fatalf("run %s: %+v", run.Status, run.Error)
	}
	if len(ws.files) != 2 || !bytes.Equal(ws.files[1], memoBytes) || ws.names[1] != "memo.m4a" || ws.models[1] != "whisper-1" {
		t.Fatalf("transcription requests: %d files, names %q, models %q", len(ws.files), ws.names, ws.models)
	}
	if len(*bodies) != 1 {
		t.Fatalf("%d model requests", len(*bodies))
	}
	want := `"messages":[{"role":"user","content":"what does the memo say?"},{"role":"user","content":"[Transcript of memo.m4a]\nBuy acorns on Friday."}]`
	if !strings.Contains((*bodies)[0], want) {
		t.Fatalf("model request\n%s\nwant it to contain\n%s", (*bodies)[0], want)
	}
	n := countKinds(e.events("s1"))
	if n[core.KindRunTranscriptionRequested] != 1 || n[core.KindRunTranscriptionCompleted] != 1 {
		t.Fatalf("events %v", n)
	}
	var entry core.Entry
	e.host.Inspect(context.Background(), "s1", func(s *core.State) {
		for _, en := range s.Context() {
			if core.IsTranscript(en.Content) {
				entry = en
			}
		}
	})
	if entry.ProvenanceRef == nil || entry.ProvenanceRef.Digest.String() != content.Sum(memoBytes).String() || entry.Role != core.RoleUser {
		t.Fatalf("transcript entry %+v", entry)
	}
	rec, err := e.blobs.Get(context.Background(), entry.Content.Digest)
	if err != nil || string(rec) != `{"text":"Buy acorns on Friday.","filename":"memo.m4a"}` {
		t.Fatalf("stored record %s %v", rec, err)
	}
}

func TestHost_ATranscriptionFailureFailsTheRunWithTheReason(t *testing.T) {
	e, _, bodies := transcribingEnv(t, reply{400, `{"error":{"message":"Invalid file format."}}`})
	run := e.waitRun("s1", e.startAudioRun(t))
	if run.Status != core.StatusFailed || run.Error == nil || run.Error.Kind != core.FailureTranscription ||
		!strings.Contains(run.Error.Message, "memo.m4a") || !strings.Contains(run.Error.Message, "Invalid file format.") {
		t.Fatalf("run %s: %+v", run.Status, run.Error)
	}
	if len(*bodies) != 0 || run.Turns != 0 {
		t.Fatalf("the model was called: %d requests, %d turns", len(*bodies), run.Turns)
	}
}
