package anthropic

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// The scripted 30-turn session of TestSpec_PrefixStability, read through the
// cache segments the adapter reports: every request repeats all of the
// previous request's segments (prefixFraction 1.0 in the prompt-cache
// report), except the one after the instruction change, whose first
// differing segment is the instructions block; and the reported size is the
// first request's body.
func TestSegments_ScriptedSessionRepeatsTheWholePrefix(t *testing.T) {
	f := &fakeMessages{t: t, wantKey: testKey, respond: func(n int, _ []byte) reply {
		body, _ := scriptedTurn(n + 1)
		return reply{status: 200, body: body}
	}}
	_, ep := f.start(t)
	a := adapterFor(ep)

	b := newCtx(t)
	b.instructions("instructions.main", "You are the game-night assistant. Keep answers short.")
	b.user("Turn 1: do I need a coat for the Tigers game?")
	var pending []core.ToolCall
	var prev []core.CacheSegment
	for turn := 1; turn <= sessionTurns; turn++ {
		if turn > 1 {
			for _, c := range pending {
				b.toolResult(c.CallID, c.Name, fmt.Sprintf(`{"result":"ok for %s"}`, c.CallID))
			}
			if len(pending) == 0 || turn%4 == 0 {
				b.user(fmt.Sprintf("Turn %d: and what about the parking?", turn))
			}
			if turn == instructionChangeTurn {
				b.next++
				repl := core.Entry{ID: fmt.Sprintf("e%d", b.next), Key: "instructions.main", Kind: core.EntryInstructions, Source: core.SourceAPI,
					Content: b.put([]byte("You are the game-night assistant. Answer in one sentence."), content.MediaText)}
				b.entries = append([]core.Entry{repl}, b.entries[1:]...)
			}
		}
		req := b.request()
		out, err := a.Generate(context.Background(), b.blobs, req)
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		b.admit(out)
		pending = out.ToolCalls

		sent := f.requests()
		if out.RequestBytes != int64(len(sent[len(sent)-1])) {
			t.Fatalf("turn %d: reported %d request bytes, sent %d", turn, out.RequestBytes, len(sent[len(sent)-1]))
		}
		cur := out.Segments
		if len(cur) < len(req.Tools)+2 || cur[0].Kind != core.SegmentTool || cur[len(req.Tools)].Kind != core.SegmentInstructions {
			t.Fatalf("turn %d: segments %+v", turn, cur)
		}
		if turn > 1 {
			n, size := core.SharedPrefix(prev, cur)
			switch {
			case turn == instructionChangeTurn:
				at := cur[n]
				if n != len(req.Tools) || at.Kind != core.SegmentInstructions || !slices.Contains(at.Keys, "instructions.main") {
					t.Fatalf("turn %d: first difference at %d (%+v), want the instructions after %d tools", turn, n, at, len(req.Tools))
				}
			case n != len(prev):
				t.Fatalf("turn %d repeats %d of the previous request's %d segments; segment %d was %+v, is %+v", turn, n, len(prev), n, prev[n], cur[n])
			default:
				t.Logf("turn %2d: %5d of %5d segment bytes repeat the previous request (%d segments)", turn, size, core.SegmentTotal(cur), len(cur))
			}
		}
		prev = cur
	}
}
