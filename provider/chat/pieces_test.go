package chat

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// A request lowered from kept pieces is the request lowered from the blobs,
// byte for byte and segment for segment, on every turn of a session that
// grows through the golden context and every recorded payload and then has
// entries cut out of the middle of its groups. Both reasoning options share
// one cache, as every endpoint of a process does; a small cache that keeps
// evicting gives the same bytes too.
func TestPiecesLowerTheSameRequest(t *testing.T) {
	warm, small := provider.NewPieces(64<<20), provider.NewPieces(4<<10)
	b := goldenContext(t)
	check := func(step string) {
		t.Helper()
		for _, opts := range []LowerOptions{{}, {ReasoningField: "reasoning_content"}} {
			sameFromPieces(t, step, b, opts, warm, true)
			sameFromPieces(t, step, b, opts, small, false)
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

	// Cut the first tool call out of each generation that made several,
	// and the message out of another: the folded messages change.
	cut := map[string]bool{}
	for i, e := range b.entries {
		if e.Kind == core.EntryToolCall && i+1 < len(b.entries) && b.entries[i+1].Kind == core.EntryToolCall && (i == 0 || b.entries[i-1].Kind != core.EntryToolCall) {
			cut[e.ID] = true
		}
		if e.Kind == core.EntryMessage && e.Content.ProviderKind == ProviderKindMessage && len(cut) == 1 {
			cut[e.ID] = true
		}
	}
	if len(cut) < 3 {
		t.Fatalf("the payloads give %d entries to cut, want a message and two calls at least", len(cut))
	}
	b.entries = slices.DeleteFunc(b.entries, func(e core.Entry) bool { return cut[e.ID] })
	check("after cutting entries")

	// A request that repeats the last one and adds an instruction, or
	// only a message, or nothing: the system message and the last group
	// change or not, and the prefix taken from the last request must
	// follow (provider.PieceScope.Prefix).
	b.user("one more")
	check("a message added")
	check("the same request again")
	b.instructions("instructions.late", "answer in French")
	check("an instruction added at the end")
	b.user("merci")
	check("a message after the late instruction")

	// The tools change: the segments that lead the list are not the last
	// request's, so the list cannot extend it (provider.Kept.Segments).
	tools := testTools
	t.Cleanup(func() { testTools = tools })
	testTools = tools[1:]
	check("a tool fewer")
	b.user("and now?")
	check("a message with a tool fewer")
	testTools = tools
	check("the tools back")
	testTools = slices.Clone(tools)
	slices.Reverse(testTools)
	check("the tools in another order")
	testTools = tools
	check("the tools back in order")

	// The last message is replaced: the request takes the last one's
	// prefix, and the piece after it is not the one the last list had.
	b.user("a first try")
	check("a message to replace")
	b.entries = b.entries[:len(b.entries)-1]
	b.user("a second try")
	check("the message replaced")
}

// sameFromPieces lowers b's request without pieces and with them, and
// checks both give the same body and segments. With complete set, the
// pieces must hold the whole request afterwards: lowering it again from a
// store without any blob must still give the same.
func sameFromPieces(t *testing.T, step string, b *ctxBuilder, opts LowerOptions, pieces *provider.Pieces, complete bool) {
	t.Helper()
	ctx := context.Background()
	req := request(b)
	want, wantSegs, err := lowerWithSegments(ctx, b.blobs, req, opts)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	req.Pieces = pieces
	stores := []blob.Store{b.blobs}
	if complete {
		stores = append(stores, blob.NewMemory())
	}
	for i, blobs := range stores {
		got, segs, err := lowerWithSegments(ctx, blobs, req, opts)
		if err != nil {
			t.Fatalf("%s (%+v, pass %d): %v", step, opts, i, err)
		}
		if string(got) != string(want) {
			t.Fatalf("%s (%+v, pass %d): the body from pieces differs:\n got %s\nwant %s", step, opts, i, got, want)
		}
		if !reflect.DeepEqual(segs, wantSegs) {
			t.Fatalf("%s (%+v, pass %d): the segments from pieces differ:\n got %+v\nwant %+v", step, opts, i, segs, wantSegs)
		}
	}
}
