package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Streaming from the provider to the terminal: a provider record with
// "stream": true, a Chat Completions fake that streams its answer and
// holds the rest of it after the first piece, and `cairn chat`, which
// shows the answer's beginning while the provider still writes (its
// "assistant>" line is complete only once a piece has arrived), and the
// whole answer once.
func TestE2E_ChatPrintsTheAnswerAsItStreams(t *testing.T) {
	release := make(chan struct{})
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"stream":true,"stream_options":{"include_usage":true}`) {
			http.Error(w, `{"error":{"message":"fake: a stream was not asked for"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, finish)
			w.(http.Flusher).Flush()
		}
		chunk(`{"role":"assistant","content":"Streams "}`, "null")
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		chunk(`{"content":"arrive in pieces."}`, "null")
		chunk(`{}`, `"stop"`)
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4,\"total_tokens\":9}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(fake.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "providers.json")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"providers":{"fake":{"baseUrl":%q,"stream":true}}}`, fake.URL+"/v1"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServeWith(t, []string{"--data", filepath.Join(dir, "data"), "--config", cfg})
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
