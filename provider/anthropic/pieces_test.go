package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// A request lowered from kept pieces is the request lowered from the blobs,
// byte for byte and segment for segment, on every turn of a session that
// grows through the golden context and every recorded payload, and then
// loses its user questions, so that assistant turns merge into one
// message. Cache markers move every turn and differ with the cache TTL,
// which both requests share one cache across. A small cache that keeps
// evicting gives the same bytes too.
func TestPiecesLowerTheSameRequest(t *testing.T) {
	warm, small := provider.NewPieces(64<<20), provider.NewPieces(4<<10)
	b := goldenContext(t)
	check := func(step string) {
		t.Helper()
		for _, params := range []json.RawMessage{nil, json.RawMessage(`{"cacheTtl":"1h","version":1}`)} {
			sameFromPieces(t, step, b, params, warm, true)
			sameFromPieces(t, step, b, params, small, false)
		}
	}
	check("golden context")
	for _, path := range payloadFiles(t) {
		name := filepath.Base(path)
		b.decode(readPayload(t, name))
		check(name)
		b.user("and then?")
		check(name + ", next question")
	}

	last := b.entries[len(b.entries)-1].ID
	b.entries = slices.DeleteFunc(b.entries, func(e core.Entry) bool {
		return e.Kind == core.EntryMessage && e.Role == core.RoleUser && e.ID != last
	})
	check("after cutting the questions")
}

// sameFromPieces lowers b's request without pieces and with them, and
// checks both give the same body and segments. With complete set, the
// pieces must hold the whole request afterwards: lowering it again from a
// store without any blob must still give the same.
func sameFromPieces(t *testing.T, step string, b *ctxBuilder, params json.RawMessage, pieces *provider.Pieces, complete bool) {
	t.Helper()
	req := b.request()
	req.Params = params
	want, wantSegs := lowerForTest(t, step, b.blobs, req)
	req.Pieces = pieces
	stores := []blob.Store{b.blobs}
	if complete {
		stores = append(stores, blob.NewMemory())
	}
	for i, blobs := range stores {
		got, segs := lowerForTest(t, step, blobs, req)
		if string(got) != string(want) {
			t.Fatalf("%s (%s, pass %d): the body from pieces differs:\n got %s\nwant %s", step, params, i, got, want)
		}
		if !reflect.DeepEqual(segs, wantSegs) {
			t.Fatalf("%s (%s, pass %d): the segments from pieces differ:\n got %+v\nwant %+v", step, params, i, segs, wantSegs)
		}
	}
}

// lowerForTest returns the body and the segments Generate reports, and
// keeps the request's state in req.Pieces as Generate does.
func lowerForTest(t *testing.T, step string, blobs blob.Store, req provider.Request) ([]byte, []provider.Segment) {
	t.Helper()
	p, err := parseParams(req.Params)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	l, err := lower(context.Background(), blobs, req.Entries, req.Pieces.Scope(APIKind, req, ""))
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	parts, segs, err := l.request(req.Model.Model, p, req.Tools)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	return bytes.Join(parts, nil), segs
}

// The state a request keeps for the next one is never written by the next:
// a request that goes on from it and fails (a blob it needs is missing)
// leaves it as it was, and the request after gives the same bytes as one
// lowered from the blobs. The user messages that follow merge into the
// kept state's last message, which is where a shared state would change.
func TestKeptStateSurvivesAFailedRequest(t *testing.T) {
	warm := provider.NewPieces(64 << 20)
	b := goldenContext(t)
	b.user("first")
	sameFromPieces(t, "the kept request", b, nil, warm, false)
	kept := slices.Clone(b.entries)

	b.user("steering that merges into the last user message")
	b.user("and a message whose blob is missing")
	missing := b.entries[len(b.entries)-1]
	missing.ID, missing.Content.Digest = "e-missing", content.Sum([]byte("a blob nobody stored"))
	b.entries[len(b.entries)-1] = missing
	req := b.request()
	req.Pieces = warm
	if _, err := Lower(context.Background(), b.blobs, req); err == nil {
		t.Fatal("a request whose blob is missing was lowered")
	}

	b.entries = append(kept, b.add(core.EntryInput{Kind: core.EntryMessage, Role: core.RoleUser, Content: b.put([]byte("another"), "text/plain")}, core.SourceUser))
	sameFromPieces(t, "after the failed request", b, nil, warm, false)
}
