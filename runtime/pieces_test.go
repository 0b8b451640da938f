package runtime_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// readingBlobs counts the blobs read through it.
type readingBlobs struct {
	blob.Store
	gets int
}

func (r *readingBlobs) Get(ctx context.Context, d content.Digest) ([]byte, error) {
	r.gets++
	return r.Store.Get(ctx, d)
}

// notingChat is a Chat Completions adapter for provider "p" whose server
// answers every request "Noted." and keeps the request bodies.
func notingChat(t *testing.T) (map[string]provider.Adapter, *[][]byte) {
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		bodies = append(bodies, body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Noted."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`)
	}))
	t.Cleanup(srv.Close)
	return map[string]provider.Adapter{core.APIChatCompletions: chat.New(endpoint.Static{"p": {BaseURL: srv.URL}}, srv.Client())}, &bodies
}

// An executor with Pieces hands them to its adapter: a turn reads only the
// blobs of the entries no earlier turn lowered, and sends and reports
// exactly what an executor without them sends and reports.
func TestGenerateLowersOnlyNewEntries(t *testing.T) {
	ctx := context.Background()
	adapters, bodies := notingChat(t)

	mem := blob.NewMemory()
	reads := &readingBlobs{Store: mem}
	files := store.NewMemory(mem)
	warm := &runtime.Executor{Blobs: reads, Adapters: adapters, Files: files, Pieces: provider.NewPieces(1 << 20)}
	cold := &runtime.Executor{Blobs: mem, Adapters: adapters, Files: files}
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"}}

	var entries []core.Entry
	var last *content.ContentRef
	add := func(kind, role, text string) {
		ref, err := blob.PutRef(ctx, mem, []byte(text), content.MediaText, "")
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, core.Entry{ID: fmt.Sprintf("e%d", len(entries)+1), Kind: kind, Role: role, Source: core.SourceUser, Content: ref})
	}
	add(core.EntryInstructions, "", "Be brief.")
	for turn := 1; turn <= 80; turn++ { // past one segment chunk
		add(core.EntryMessage, core.RoleUser, fmt.Sprintf("question %d", turn))
		w := core.GenerateWork{RunID: "r1", Turn: turn, Config: cfg, Entries: entries, Fingerprint: core.PlanFingerprint(cfg, entries), LastSegments: last}
		reads.gets = 0
		got, err := warm.Generate(ctx, "s1", w)
		if err != nil {
			t.Fatal(err)
		}
		want, err := cold.Generate(ctx, "s1", w)
		if err != nil {
			t.Fatal(err)
		}
		if reads.gets != 2 { // the question, and the last answer (at first, the instructions)
			t.Fatalf("turn %d read %d blobs, want 2: the entries no turn lowered before", turn, reads.gets)
		}
		if b := *bodies; string(b[len(b)-2]) != string(b[len(b)-1]) {
			t.Fatalf("turn %d: the request from pieces differs:\n got %s\nwant %s", turn, b[len(b)-2], b[len(b)-1])
		}
		// The same facts: the segment list is stored as a delta on the
		// previous turn's, which the cold executor reads back.
		if *got.Cache != *want.Cache {
			t.Fatalf("turn %d: cache facts %+v, want %+v", turn, got.Cache, want.Cache)
		}
		// Turn 1 has no list before it, and every SegmentDeltaDepth+1st
		// list starts over whole.
		delta := (turn-1)%(core.SegmentDeltaDepth+1) != 0
		if (got.Cache.Segments.MediaType == core.MediaRequestSegmentDelta) != delta {
			t.Fatalf("turn %d: the segment list is stored as %s; want a delta: %v", turn, got.Cache.Segments.MediaType, delta)
		}
		l, err := runtime.ReadSegments(ctx, mem, got.Cache.Segments, nil)
		if err != nil || len(l.Segments) != got.Cache.SegmentCount {
			t.Fatalf("turn %d: read back %d segments (%v), want %d", turn, len(l.Segments), err, got.Cache.SegmentCount)
		}
		last = &got.Cache.Segments
		// The answer joins the context as the next turn's material.
		for _, in := range got.Entries {
			entries = append(entries, core.Entry{ID: fmt.Sprintf("e%d", len(entries)+1), Kind: in.Kind, Role: in.Role, Source: core.SourceModel, Content: in.Content})
		}
	}
}

// readingMany is readingBlobs that also reads many blobs at once.
type readingMany struct {
	readingBlobs
	many int
}

func (r *readingMany) GetMany(ctx context.Context, ds []content.Digest) (map[content.Digest][]byte, error) {
	r.many++
	return blob.GetMany(ctx, r.readingBlobs.Store, ds)
}

// A session's first request in a process lowers every entry of its
// context: its blobs are read in one call, not one each, and the request
// is the one an executor that reads them one by one sends.
func TestGenerateReadsAColdContextAtOnce(t *testing.T) {
	ctx := context.Background()
	adapters, bodies := notingChat(t)
	mem := blob.NewMemory()
	files := store.NewMemory(mem)
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"}}

	var entries []core.Entry
	for i := range 200 {
		kind, role, text := core.EntryMessage, core.RoleUser, fmt.Sprintf("question %d", i/2)
		if i == 0 {
			kind, role, text = core.EntryInstructions, "", "Be brief."
		} else if i%2 == 0 {
			role, text = core.RoleAssistant, fmt.Sprintf("answer %d", i/2)
		}
		ref, err := blob.PutRef(ctx, mem, []byte(text), content.MediaText, "")
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, core.Entry{ID: fmt.Sprintf("e%d", i+1), Kind: kind, Role: role, Source: core.SourceUser, Content: ref})
	}
	work := func(entries []core.Entry) core.GenerateWork {
		return core.GenerateWork{RunID: "r1", Turn: 1, Config: cfg, Entries: entries, Fingerprint: core.PlanFingerprint(cfg, entries)}
	}

	many := &readingMany{readingBlobs: readingBlobs{Store: mem}}
	x := &runtime.Executor{Blobs: many, Adapters: adapters, Files: files, Pieces: provider.NewPieces(1 << 20)}
	if _, err := x.Generate(ctx, "s1", work(entries)); err != nil {
		t.Fatal(err)
	}
	if many.many != 1 || many.gets != 0 {
		t.Fatalf("a cold request of %d entries read %d batches and %d single blobs, want 1 and 0", len(entries), many.many, many.gets)
	}
	one := &readingBlobs{Store: mem} // no GetMany
	if _, err := (&runtime.Executor{Blobs: one, Adapters: adapters, Files: files}).Generate(ctx, "s1", work(entries)); err != nil {
		t.Fatal(err)
	}
	if b := *bodies; one.gets != len(entries) || string(b[0]) != string(b[1]) {
		t.Fatalf("read one by one: %d gets for %d entries; same request: %v", one.gets, len(entries), string(b[0]) == string(b[1]))
	}

	// The next request is warm: it reads its new entry alone.
	ref, err := blob.PutRef(ctx, mem, []byte("one more question"), content.MediaText, "")
	if err != nil {
		t.Fatal(err)
	}
	entries = append(entries, core.Entry{ID: "e201", Kind: core.EntryMessage, Role: core.RoleUser, Source: core.SourceUser, Content: ref})
	if _, err := x.Generate(ctx, "s1", work(entries)); err != nil {
		t.Fatal(err)
	}
	if many.many != 1 || many.gets != 1 {
		t.Fatalf("the warm request read %d batches and %d single blobs in all, want still 1 batch and 1 blob", many.many, many.gets)
	}
}
