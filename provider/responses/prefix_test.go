package responses

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/provider"
)

// callIDPattern finds call_id values in a recorded body, so each scripted
// turn can give its calls ids of their own (the recordings repeat).
var callIDPattern = regexp.MustCompile(`("call_id"\s*:\s*")`)

// scriptedTurn is one provider answer of the scripted session.
type scriptedTurn struct {
	file       string
	truncated  bool // answered as incomplete at max_output_tokens
	steerAfter bool // a steering message arrives during this turn's tool round
}

// sessionScript: 30 turns of tool rounds (single and parallel calls, with and
// without reasoning), hosted web and file search with encrypted reasoning,
// a refusal, a generation cut off at its token limit, and steering.
var sessionScript = []scriptedTurn{
	{file: "reasoning-function-call.json"},                   // 1
	{file: "reasoning-encrypted-summary.json"},               // 2
	{file: "parallel-function-calls.json", steerAfter: true}, // 3
	{file: "api-reference-function-call.json"},               // 4
	{file: "web-search-sources.json"},                        // 5
	{file: "api-reference-function-call.json"},               // 6
	{file: "file-search-citations.json"},                     // 7
	{file: "reasoning-function-call.json", steerAfter: true}, // 8
	{file: "parallel-function-calls.json"},                   // 9
	{file: "api-reference-web-search.json"},                  // 10
	{file: "refusal.json"},                                   // 11
	{file: "reasoning-function-call.json"},                   // 12
	{file: "web-search-encrypted-reasoning.json"},            // 13
	{file: "parallel-function-calls.json", steerAfter: true}, // 14
	{file: "reasoning-function-call.json", truncated: true},  // 15
	{file: "api-reference-function-call.json"},               // 16
	{file: "api-reference-file-search.json"},                 // 17
	{file: "reasoning-function-call.json"},                   // 18
	{file: "parallel-function-calls.json", steerAfter: true}, // 19
	{file: "reasoning-encrypted-summary.json"},               // 20: instructions changed before it
	{file: "api-reference-function-call.json"},               // 21
	{file: "web-search-sources.json"},                        // 22
	{file: "reasoning-function-call.json", steerAfter: true}, // 23
	{file: "api-reference-function-call.json"},               // 24
	{file: "file-search-citations.json"},                     // 25
	{file: "parallel-function-calls.json"},                   // 26
	{file: "reasoning-encrypted-summary.json"},               // 27
	{file: "reasoning-function-call.json", steerAfter: true}, // 28
	{file: "api-reference-function-call.json"},               // 29
	{file: "api-reference-web-search.json"},                  // 30
}

const instructionChangeTurn = 20

// scriptedBody is a recorded body with this turn's call ids made unique and,
// when asked, turned into a response cut off at its output token limit.
func scriptedBody(t *testing.T, turn int, st scriptedTurn) []byte {
	body := callIDPattern.ReplaceAll(readPayload(t, st.file), []byte(fmt.Sprintf("${1}t%02d_", turn)))
	if st.truncated {
		n := len(body)
		body = bytes.Replace(body, []byte(`"status": "completed"`), []byte(`"status": "incomplete"`), 1)
		body = bytes.Replace(body, []byte(`"incomplete_details": null`), []byte(`"incomplete_details": {"reason": "max_output_tokens"}`), 1)
		if len(body) == n {
			t.Fatalf("turn %d: could not mark %s incomplete", turn, st.file)
		}
	}
	return body
}

// TestPrefixStability drives a 30-turn session through the adapter and the
// fake server (which enforces the API's input rules), appending outputs, tool
// results and steering the way the runtime does. For every turn without an
// instruction change, the previous request's input must be an exact byte
// prefix of the next one's, with the same instructions; it logs the fraction
// of each request's bytes that repeat the previous request's prefix.
func TestPrefixStability(t *testing.T) {
	if len(sessionScript) != 30 {
		t.Fatalf("script has %d turns", len(sessionScript))
	}
	f := &fakeResponses{wantKey: testKey}
	a := adapterFor(f.start(t))

	b := newCtx(t)
	b.instructions("instructions.a", "You are the research desk. Use tools when they help.")
	b.instructions("instructions.b", "Answer in plain English.")
	run := 1
	b.user("run 1: what is the plan?")

	for turn := 1; turn <= len(sessionScript); turn++ {
		st := sessionScript[turn-1]
		if turn == instructionChangeTurn {
			b.instructions("instructions.b", "Answer in plain English, in at most three sentences.")
		}
		f.queue(reply{status: 200, body: scriptedBody(t, turn, st)})
		out, err := a.Generate(context.Background(), b.blobs, provider.Request{
			SessionID: "sess-prefix", Model: fakeRequest(b).Model, Entries: b.entries, Tools: testTools,
		})
		if err != nil {
			t.Fatalf("turn %d (%s): %v", turn, st.file, err)
		}
		b.admit(out.Entries, out.Failure != nil)
		if len(out.ToolCalls) > 0 && out.Failure == nil {
			for _, c := range out.ToolCalls {
				b.toolResult(c.CallID, c.Name, fmt.Sprintf(`{"turn":%d,"call":%q,"ok":true}`, turn, c.CallID))
			}
			if st.steerAfter {
				b.user(fmt.Sprintf("steer (turn %d): also check the sources", turn))
			}
			continue
		}
		if st.steerAfter {
			t.Fatalf("turn %d: steering scripted outside a tool round", turn)
		}
		run++
		b.user(fmt.Sprintf("run %d: next question", run))
	}

	reqs := f.requests()
	if len(reqs) != len(sessionScript) {
		t.Fatalf("%d requests", len(reqs))
	}
	t.Logf("turn  body-bytes  reused-bytes  reused-fraction  input-bytes  input-reused-fraction")
	t.Logf("%4d  %10d  %12d  %15.3f  %11d  %21.3f", 1, len(reqs[0]), 0, 0.0, len(rawMember(t, reqs[0], "input")), 0.0)
	var sum float64
	for n := 1; n < len(reqs); n++ {
		turn := n + 1
		prev, next := reqs[n-1], reqs[n]
		pi, ni := inputPrefix(t, prev), inputPrefix(t, next)
		samePrefix := bytes.HasPrefix(ni, append(pi[:len(pi):len(pi)], ','))
		pr, nr := parseRequest(t, prev), parseRequest(t, next)
		sameInstructions := *pr.Instructions == *nr.Instructions
		if turn == instructionChangeTurn {
			if sameInstructions {
				t.Fatalf("turn %d: instructions did not change", turn)
			}
		} else if !samePrefix || !sameInstructions {
			t.Fatalf("turn %d: input prefix kept %v, instructions kept %v", turn, samePrefix, sameInstructions)
		}
		// Within the body too: everything up to the end of the previous input
		// (model, instructions, tools, input) is repeated byte for byte.
		inputEnd := bytes.Index(prev, pi) + len(pi)
		if turn != instructionChangeTurn && !bytes.HasPrefix(next, prev[:inputEnd]) {
			t.Fatalf("turn %d: body does not repeat the previous body up to its input's end", turn)
		}
		reused := commonPrefix(prev, next)
		frac := float64(reused) / float64(len(next))
		inFrac := 0.0
		if samePrefix {
			inFrac = float64(len(pi)) / float64(len(ni)+1)
		}
		sum += frac
		note := ""
		if turn == instructionChangeTurn {
			note = "  (instructions changed)"
		}
		t.Logf("%4d  %10d  %12d  %15.3f  %11d  %21.3f%s", turn, len(next), reused, frac, len(ni)+1, inFrac, note)
	}
	t.Logf("mean reused fraction over turns 2-%d: %.3f", len(reqs), sum/float64(len(reqs)-1))

	// The turn-15 generation was cut off after reasoning + a function call;
	// the core dropped the call, so the reasoning must not have been re-sent
	// on any later turn (the fake server would have answered 400).
	for n := 15; n < len(reqs); n++ {
		if strings.Count(string(reqs[n]), `"call_id":"t15_`) != 0 {
			t.Fatalf("turn %d carries the dropped call of turn 15", n+1)
		}
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
