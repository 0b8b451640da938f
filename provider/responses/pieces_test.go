package responses

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// A request lowered from kept pieces is the request lowered from the blobs,
// byte for byte and segment for segment, on every turn of a session that
// grows through the golden context and every recorded payload and then
// loses the items its reasoning items preceded (which must then be left
// out, a choice made per request). A small cache that keeps evicting gives
// the same bytes too.
func TestPiecesLowerTheSameRequest(t *testing.T) {
	warm, small := provider.NewPieces(64<<20), provider.NewPieces(4<<10)
	b := goldenContext(t)
	check := func(step string) {
		t.Helper()
		sameFromPieces(t, step, b, warm, true)
		sameFromPieces(t, step, b, small, false)
	}
	check("golden context")
	for _, path := range payloadFiles(t) {
		name := filepath.Base(path)
		b.decode(readPayload(t, name))
		check(name)
		b.user("and then?")
		check(name + ", next question")
	}

	// A context that ends in a reasoning item leaves it out (nothing
	// follows it yet); once its item follows, the next request, taking the
	// last one's kept prefix, sends both.
	all := slices.Clone(b.entries)
	r := slices.IndexFunc(all, func(e core.Entry) bool { return e.Kind == core.EntryReasoning })
	if r < 0 || r+1 >= len(all) {
		t.Fatal("no reasoning item in the payloads")
	}
	fresh := provider.NewPieces(64 << 20)
	for _, n := range []int{r + 1, r + 2, len(all)} {
		b.entries = all[:n]
		sameFromPieces(t, "a context of "+strconv.Itoa(n)+" entries", b, fresh, true)
	}

	cut := map[string]bool{}
	for i, e := range b.entries {
		if e.Kind == core.EntryReasoning && i+1 < len(b.entries) && b.entries[i+1].Content.ProviderKind == ProviderKindItem {
			cut[b.entries[i+1].ID] = true
		}
	}
	if len(cut) == 0 {
		t.Fatal("no reasoning item in the payloads precedes an item")
	}
	b.entries = slices.DeleteFunc(b.entries, func(e core.Entry) bool { return cut[e.ID] })
	check("after cutting the items reasoning preceded")

	// The tools change: the segments that lead the list are not the last
	// request's, so the list cannot extend it (provider.Kept.Segments).
	tools := testTools
	t.Cleanup(func() { testTools = tools })
	testTools = tools[1:]
	check("a tool fewer")
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

	// An instruction after the conversation (the core keeps them first; a
	// request need not): it joins the instructions, and a request that has
	// one keeps no prefix, so the next request still finds it.
	b.instructions("instructions.late", "Answer in French.")
	check("an instruction after the conversation")
	b.user("et alors ?")
	check("a question after it")
	b.user("encore ?")
	check("and another")
}

// sameFromPieces lowers b's request without pieces and with them, and
// checks both give the same body and segments. With complete set, the
// pieces must hold the whole request afterwards: lowering it again from a
// store without any blob must still give the same.
func sameFromPieces(t *testing.T, step string, b *ctxBuilder, pieces *provider.Pieces, complete bool) {
	t.Helper()
	ctx := context.Background()
	req := request(b)
	want, wantSegs, err := lowerWithSegments(ctx, b.blobs, req, LowerOptions{})
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	req.Pieces = pieces
	stores := []blob.Store{b.blobs}
	if complete {
		stores = append(stores, blob.NewMemory())
	}
	for i, blobs := range stores {
		got, segs, err := lowerWithSegments(ctx, blobs, req, LowerOptions{})
		if err != nil {
			t.Fatalf("%s (pass %d): %v", step, i, err)
		}
		if string(got) != string(want) {
			t.Fatalf("%s (pass %d): the body from pieces differs:\n got %s\nwant %s", step, i, got, want)
		}
		if !reflect.DeepEqual(segs, wantSegs) {
			t.Fatalf("%s (pass %d): the segments from pieces differ:\n got %+v\nwant %+v", step, i, segs, wantSegs)
		}
	}
}
