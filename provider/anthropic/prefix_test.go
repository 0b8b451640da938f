package anthropic

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// sessionTurns is the length of the scripted session.
const sessionTurns = 30

// instructionChangeTurn is the turn before which the instructions change.
const instructionChangeTurn = 20

// scriptedTurn is what the fake server answers on turn n: a cycle of a
// two-tool round, a one-tool round, and an answer that is either cited text
// or a server web search.
func scriptedTurn(n int) (body []byte, shape string) {
	switch n % 3 {
	case 1:
		return scriptedThinkingToolUse(n, "search", "weather"), "2 tool calls"
	case 2:
		return scriptedThinkingToolUse(n, "weather"), "1 tool call"
	}
	if n%2 == 0 {
		return scriptedWebSearch(n), "web search answer"
	}
	return scriptedAnswer(n), "cited answer"
}

// TestSpec_PrefixStability drives a 30-turn session (tool rounds, steering
// beside tool results, a changed instruction before turn 20) through the
// adapter against the fake server, and checks that for every turn without
// an instruction change the previous request, through its last message, is
// a byte prefix of the next one once cache markers are stripped (the
// comparison cache.go documents). It logs the reused-bytes fraction.
func TestSpec_PrefixStability(t *testing.T) {
	f := &fakeMessages{t: t, wantKey: testKey, respond: func(n int, _ []byte) reply {
		body, _ := scriptedTurn(n + 1)
		return reply{status: 200, body: body}
	}}
	_, ep := f.start(t)
	a := adapterFor(ep)

	b := newCtx(t)
	b.instructions("instructions.main", "You are the game-night assistant. Keep answers short.")
	b.user("Turn 1: do I need a coat for the Tigers game?")

	var shapes []string
	var pending []core.ToolCall
	for turn := 1; turn <= sessionTurns; turn++ {
		if turn > 1 {
			var add []string
			for _, c := range pending {
				b.toolResult(c.CallID, c.Name, fmt.Sprintf(`{"result":"ok for %s"}`, c.CallID))
				add = append(add, "result")
			}
			if len(pending) == 0 || turn%4 == 0 {
				// A new question, or steering beside the tool results.
				b.user(fmt.Sprintf("Turn %d: and what about the parking?", turn))
				add = append(add, "user")
			}
			if turn == instructionChangeTurn {
				// The instruction is replaced: a new entry under the same key,
				// first in context like every instruction.
				b.next++
				repl := core.Entry{ID: fmt.Sprintf("e%d", b.next), Key: "instructions.main", Kind: core.EntryInstructions, Source: core.SourceAPI,
					Content: b.put([]byte("You are the game-night assistant. Answer in one sentence."), content.MediaText)}
				b.entries = append([]core.Entry{repl}, b.entries[1:]...)
				add = append(add, "instructions changed")
			}
			shapes = append(shapes, strings.Join(add, "+"))
		} else {
			shapes = append(shapes, "user")
		}
		out, err := a.Generate(context.Background(), b.blobs, b.request())
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		b.admit(out)
		pending = out.ToolCalls
	}

	reqs := f.requests()
	if len(reqs) != sessionTurns {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, r := range reqs {
		if n := countMarkers(r); n > 4 {
			t.Fatalf("request %d has %d markers", i+1, n)
		}
	}

	t.Logf("reused = bytes of the request that are a byte prefix shared with the previous request; stripped = cache markers removed (cache.go), as sent = with markers")
	t.Logf("turn | appended before the request           | body B | reused B | reused (stripped) | reused (as sent) | reply")
	for i := range reqs {
		next := stripMarkers(reqs[i])
		_, answer := scriptedTurn(i + 1)
		if i == 0 {
			t.Logf("%4d | %-40s | %6d | %8d | %16.1f%% | %15.1f%% | %s", 1, shapes[0], len(next), 0, 0.0, 0.0, answer)
			continue
		}
		prev := stripMarkers(reqs[i-1])
		common := commonPrefix(prev, next)
		sent := commonPrefix(reqs[i-1], reqs[i])
		t.Logf("%4d | %-40s | %6d | %8d | %16.1f%% | %15.1f%% | %s", i+1, shapes[i], len(next), common,
			100*float64(common)/float64(len(next)), 100*float64(sent)/float64(len(reqs[i])), answer)

		// Messages: always a prefix, instructions live in system.
		pm, nm := messagesOf(t, prev), messagesOf(t, next)
		if !bytes.HasPrefix(nm, pm) {
			t.Fatalf("turn %d: the previous request's messages are not a byte prefix of this one's", i+1)
		}
		if i+1 == instructionChangeTurn {
			if bytes.HasPrefix(next, prev[:len(prev)-2]) {
				t.Fatal("the instruction change did not change the request")
			}
			continue
		}
		// The whole body through the last message.
		if !bytes.HasPrefix(next, prev[:len(prev)-2]) {
			t.Fatalf("turn %d: the previous request is not a byte prefix of this one (markers stripped):\nprev %s\nnext %s", i+1, prev, next)
		}
	}
}

// messagesOf returns the bytes of a body's messages array without its
// closing bracket, so a grown conversation has the old one as a prefix.
func messagesOf(t *testing.T, body []byte) []byte {
	t.Helper()
	i := bytes.Index(body, []byte(`,"messages":[`))
	if i < 0 || !bytes.HasSuffix(body, []byte("]}")) {
		t.Fatalf("no messages: %s", body)
	}
	return body[i : len(body)-2]
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
