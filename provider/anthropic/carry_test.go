package anthropic

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// A long chat's request takes what the last one carried: the messages no
// request marks again go as one part, written once, and the segment list
// extends the last one's in place (the executor then compares the two in
// one step), as does the message list, but when they outgrow their arrays.
// Request 300 has as many parts as request 3, and every request is the
// body and the segments lowering without pieces gives.
func TestALongChatCarriesItsSettledMessages(t *testing.T) {
	pieces := provider.NewPieces(64 << 20)
	b := newCtx(t)
	b.instructions("instructions.main", "Answer briefly.")
	var prev []provider.Segment
	var partsAt3, newLists, newMessageLists int
	var prevMsg *message
	for turn := 1; turn <= 300; turn++ {
		b.user(fmt.Sprintf("Turn %d: a short question, as people write them.", turn))
		want := b.lower()
		toolSegs, err := toolSegments(testTools)
		if err != nil {
			t.Fatal(err)
		}
		wantSegs := mustConv(t, b).segmentsAfter(toolSegs)
		req := b.request()
		req.Pieces = pieces
		l, err := lower(context.Background(), b.blobs, req.Entries, req.Pieces.Scope(APIKind, req, ""))
		if err != nil {
			t.Fatal(err)
		}
		parts, segs, err := l.request(req.Model.Model, params{}, req.Tools)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Join(parts, nil); !bytes.Equal(got, want) {
			t.Fatalf("turn %d: the body differs from one lowered without pieces:\n got %s\nwant %s", turn, got, want)
		}
		if !reflect.DeepEqual(segs, wantSegs) {
			t.Fatalf("turn %d: the segments differ from those lowered without pieces", turn)
		}
		switch {
		case turn == 3:
			partsAt3 = len(parts)
		case turn > 3 && len(parts) != partsAt3:
			t.Fatalf("turn %d: the body has %d parts, against %d at turn 3", turn, len(parts), partsAt3)
		}
		if turn > 2 && &segs[0] != &prev[0] {
			newLists++ // it outgrew its array: a copy now and then, as append does
		}
		if turn > 2 && &l.messages[0] != prevMsg {
			newMessageLists++
		}
		prevMsg = &l.messages[0]
		// All but the last three: the last user message before the last
		// one is marked (the previous request's breakpoint), and so is the
		// last.
		carried := -1 // nothing carried
		if l.fold.carry != nil {
			carried = l.fold.carry.msgs
		}
		if turn > 2 && carried != len(l.messages)-3 {
			t.Fatalf("turn %d: carried %d of %d messages, want all but the last three", turn, carried, len(l.messages))
		}
		prev = segs
		b.decode(fmt.Appendf(nil, `{"id":"msg_%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Answer %d."}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":3}}`, turn, turn))
	}
	if newLists > 10 || newMessageLists > 10 {
		t.Fatalf("of 300 requests, %d made a new segment list and %d a new message list, instead of extending the last one's", newLists, newMessageLists)
	}
}

// A chat whose history holds an assistant message of thinking alone (an
// output cut off after its thinking), which normalize leaves out: every
// request is the one lowered without pieces and the conversation the fold
// and normalize made of all the entries at once, and once another message
// follows it, requests carry their settled messages again.
func TestALongChatWithAThinkingOnlyAnswer(t *testing.T) {
	pieces := provider.NewPieces(64 << 20)
	b := newCtx(t)
	b.instructions("instructions.main", "Answer briefly.")
	for turn := 1; turn <= 20; turn++ {
		b.user(fmt.Sprintf("Turn %d: a question.", turn))
		sameFromPieces(t, fmt.Sprintf("turn %d", turn), b, nil, pieces, true)
		if got, want := mustConv(t, b), wholeConversation(t, b); !reflect.DeepEqual(got.messages, want.messages) {
			t.Fatalf("turn %d: the conversation differs from the one folded and normalized at once", turn)
		}
		req := b.request()
		req.Pieces = pieces
		l, err := lower(context.Background(), b.blobs, req.Entries, req.Pieces.Scope(APIKind, req, ""))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := l.request(req.Model.Model, params{}, req.Tools); err != nil {
			t.Fatal(err)
		}
		if turn > 7 && (l.fold.carry == nil || l.fold.carry.msgs == 0) {
			t.Fatalf("turn %d carries nothing: the thinking-only answer of turn 5 stopped it", turn)
		}
		content := fmt.Sprintf(`[{"type":"text","text":"Answer %d."}]`, turn)
		stop := "end_turn"
		if turn == 5 {
			content, stop = `[{"type":"thinking","thinking":"Cut off here","signature":"c2lnbmF0dXJl"}]`, "max_tokens"
		}
		b.decode(fmt.Appendf(nil, `{"id":"msg_%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":%s,"stop_reason":%q,"usage":{"input_tokens":10,"output_tokens":3}}`, turn, content, stop))
	}
}

// wholeConversation is b's conversation as lowering made it before it
// went on from kept states: every entry folded, then normalize.
func wholeConversation(t *testing.T, b *ctxBuilder) conversation {
	t.Helper()
	load := func(e core.Entry) ([]byte, error) { return b.blobs.Get(context.Background(), e.Content.Digest) }
	var c conversation
	for _, e := range b.entries {
		p, err := lowerPiece(e, load)
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == core.EntryInstructions {
			c.system = append(c.system, p.blocks...)
			continue
		}
		c.messages = appendBlocks(c.messages, p.role, slices.Clone(p.blocks))
	}
	c.messages = normalize(c.messages)
	return c
}

// mustConv is b's conversation lowered without pieces.
func mustConv(t *testing.T, b *ctxBuilder) conversation {
	t.Helper()
	c, err := lowerContext(context.Background(), b.blobs, b.entries, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The message a left-out answer let merge is checked again: a question,
// an answer of thinking alone, then a tool result, which joins the
// question's message and must come first in it.
func TestALeftOutAnswerMergesItsNeighbours(t *testing.T) {
	pieces := provider.NewPieces(64 << 20)
	b := newCtx(t)
	b.instructions("instructions.main", "Answer briefly.")
	b.user("First question.")
	b.decode([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"First answer."}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":3}}`))
	b.user("Second question.")
	b.decode([]byte(`{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"Cut off here","signature":"c2lnbmF0dXJl"}],"stop_reason":"max_tokens","usage":{"input_tokens":10,"output_tokens":3}}`))
	b.user("Third question.")
	sameFromPieces(t, "before the tool result", b, nil, pieces, true)
	b.toolResult("toolu_1", "search", `{"ok":true}`)
	sameFromPieces(t, "after the tool result", b, nil, pieces, true)
	got, want := mustConv(t, b), wholeConversation(t, b)
	if !reflect.DeepEqual(got.messages, want.messages) {
		t.Fatal("the conversation differs from the one folded and normalized at once")
	}
	if last := got.messages[len(got.messages)-1]; last.blocks[0].typ != typeToolResult {
		t.Fatalf("the last message starts with a %s block, want the tool result", last.blocks[0].typ)
	}
}
