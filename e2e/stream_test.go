package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// Streaming from the provider to the terminal: a provider record with
// "stream": true, a Chat Completions fake that streams its answer and
// holds the rest of it after the first piece, and `cairn chat`, which
// shows the answer's beginning while the provider still writes (its
// "assistant>" line is complete only once a piece has arrived), and the
// whole answer once.
func TestE2E_ChatPrintsTheAnswerAsItStreams(t *testing.T) {
	release := make(chan struct{})
	fake := httptest.NewServer(heldStream(release, "Streams ", "arrive in pieces.", `{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9}`))
	t.Cleanup(fake.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	cfg, data := streamingConfig(t, fake.URL)
	srv := startServeWith(t, []string{"--data", data, "--config", cfg})
	chat := startProc(t, "chat", cairnBin, []string{"chat", "--addr", srv.addr, "--provider", "fake", "--model", "m", "Tell me about streams."}, nil, "run ")
	chat.waitLine(t, 0, "assistant>", 30*time.Second) // before the provider has finished
	close(release)
	chat.waitLine(t, 0, "run completed", 30*time.Second)
	chat.mu.Lock()
	out := strings.Join(chat.lines, "\n")
	chat.mu.Unlock()
	if !strings.Contains(out, "assistant>\n  Streams arrive in pieces.\nrun completed") || strings.Count(out, "Streams arrive") != 1 {
		t.Fatalf("cairn chat printed:\n%s", out)
	}
}

// A server SIGKILLed while an answer streams keeps no trace of the part it
// had: after a restart the generation runs again, and the log holds the
// one whole answer.
func TestE2E_KillDuringAStreamedAnswer(t *testing.T) {
	var calls atomic.Int32
	held := make(chan struct{}, 1)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) { writeChunk(w, delta, finish) }
		if calls.Add(1) == 1 { // the first attempt: a piece, then nothing until the caller dies
			chunk(`{"role":"assistant","content":"Half an ans"}`, "null")
			held <- struct{}{}
			<-r.Context().Done()
			return
		}
		chunk(`{"role":"assistant","content":"A whole "}`, "null")
		chunk(`{"content":"answer."}`, `"stop"`)
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(fake.Close)
	cfg, data := streamingConfig(t, fake.URL)
	srv := startServeWith(t, []string{"--data", data, "--config", cfg})
	sid, runID := streamedRun(t, srv.client(), "Answer.")
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the answer never started")
	}
	srv.kill(t)
	srv = startServeWith(t, []string{"--data", data, "--config", cfg})
	c := srv.client()
	if got := waitRun(t, c, sid, runID); got.Status != core.StatusCompleted || got.Output == nil || got.Output.VisibleText() != "A whole answer." {
		t.Fatalf("run = %s", mustJSON(t, got))
	}
	page, err := c.ReadEvents(context.Background(), api.EventsReadParams{SessionID: sid, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	generations := 0
	for _, ev := range page.Events {
		if strings.Contains(string(ev.Payload), "Half an ans") {
			t.Fatalf("the log holds the part streamed before the kill: %s %s", ev.Kind, ev.Payload)
		}
		if ev.Kind == core.KindTurnGenerationCompleted {
			generations++
		}
	}
	if generations != 1 || calls.Load() != 2 {
		t.Fatalf("%d generations in the log, %d provider calls; want 1 and 2", generations, calls.Load())
	}
}

// Cancelling a run closes its provider stream at once.
func TestE2E_CancelClosesTheProviderStream(t *testing.T) {
	held, closed := make(chan struct{}, 1), make(chan struct{}, 1)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Once upon\"},\"finish_reason\":null}]}\n\n")
		w.(http.Flusher).Flush()
		held <- struct{}{}
		<-r.Context().Done()
		closed <- struct{}{}
	}))
	t.Cleanup(fake.Close)
	cfg, data := streamingConfig(t, fake.URL)
	srv := startServeWith(t, []string{"--data", data, "--config", cfg})
	c := srv.client()
	sid, runID := streamedRun(t, c, "Tell a long story.")
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the story never started")
	}
	began := time.Now()
	if _, err := c.CancelRun(context.Background(), sid, runID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the provider stream stayed open after the run was cancelled")
	}
	if got := waitRun(t, c, sid, runID); got.Status != core.StatusCancelled {
		t.Fatalf("run = %s", mustJSON(t, got))
	}
	t.Logf("stream closed %s after the cancel", time.Since(began).Round(time.Millisecond))
}

// streamingConfig writes a config whose provider "fake" is the fake at
// url and asks for streams, and returns its path and a data directory.
func streamingConfig(t *testing.T, url string) (cfg, data string) {
	t.Helper()
	dir := t.TempDir()
	cfg = filepath.Join(dir, "providers.json")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"providers":{"fake":{"baseUrl":%q,"stream":true}}}`, url+"/v1"), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, filepath.Join(dir, "data")
}

// streamedRun starts a run in a new session on the fake provider.
func streamedRun(t *testing.T, c *api.Client, text string) (sessionID, runID string) {
	t.Helper()
	ctx := context.Background()
	created, err := c.CreateSession(ctx, api.CreateSessionParams{Model: core.ModelSelection{ProviderID: "fake", APIKind: core.APIChatCompletions, Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.StartRun(ctx, api.RunStartParams{SessionID: created.SessionID, Input: textInput(text)})
	if err != nil {
		t.Fatal(err)
	}
	return created.SessionID, run.RunID
}

// `cairn chat` shows a tool call once its arguments have streamed, while
// the provider has not finished its answer, and not again when the call
// is committed.
func TestE2E_ChatShowsAStreamedToolCall(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	var calls atomic.Int32
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) { writeChunk(w, delta, finish) }
		if calls.Add(1) == 1 {
			chunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"vfs_list_dir","arguments":""}}]}`, "null")
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}`, "null")
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"/\"}"}}]}`, "null")
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			chunk(`{}`, `"tool_calls"`)
		} else {
			chunk(`{"role":"assistant","content":"Nothing is there."}`, "null")
			chunk(`{}`, `"stop"`)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(fake.Close)
	cfg, data := streamingConfig(t, fake.URL)
	srv := startServeWith(t, []string{"--data", data, "--config", cfg})
	chat := startProc(t, "chat", cairnBin, []string{"chat", "--addr", srv.addr, "--provider", "fake", "--model", "m", "--tool", "vfs_list_dir", "What is there?"}, nil, "run ")
	chat.waitLine(t, 0, `[turn 1] tool call vfs_list_dir {"path":"/"}`, 30*time.Second) // before the answer is finished
	once.Do(func() { close(release) })
	chat.waitLine(t, 0, "run completed", 30*time.Second)
	chat.mu.Lock()
	out := strings.Join(chat.lines, "\n")
	chat.mu.Unlock()
	if strings.Count(out, "tool call vfs_list_dir") != 1 || !strings.Contains(out, "result vfs_list_dir:") || !strings.Contains(out, "assistant>\n  Nothing is there.\nrun completed") {
		t.Fatalf("cairn chat printed:\n%s", out)
	}
}

// writeChunk writes one Chat Completions stream chunk of a fake's answer
// and flushes it, so the client has it while the fake holds the rest.
func writeChunk(w http.ResponseWriter, delta, finish string) {
	fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, finish)
	w.(http.Flusher).Flush()
}

// heldStream is a Chat Completions fake that streams first, holds the
// rest of its answer until release, then sends rest, the finish, usage
// (when not "") and [DONE]. It refuses a request that asks for no stream
// with its usage.
func heldStream(release <-chan struct{}, first, rest, usage string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"stream":true,"stream_options":{"include_usage":true}`) {
			http.Error(w, `{"error":{"message":"fake: a stream was not asked for"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		writeChunk(w, `{"role":"assistant","content":`+strconv.Quote(first)+`}`, "null")
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		writeChunk(w, `{"content":`+strconv.Quote(rest)+`}`, "null")
		writeChunk(w, `{}`, `"stop"`)
		if usage != "" {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":%s}\n\n", usage)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}
