package responses

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// The scripted 30-turn session of TestPrefixStability, read through the
// cache segments the adapter reports: every request repeats all of the
// previous request's segments (prefixFraction 1.0 in the prompt-cache
// report) except the one after the instruction change, whose first
// differing segment is the instructions; a reasoning item left out after a
// cut-off generation leaves no segment behind; and the reported size is the
// body sent.
func TestSegments_ScriptedSessionRepeatsTheWholePrefix(t *testing.T) {
	f := &fakeResponses{wantKey: testKey}
	a := adapterFor(f.start(t))

	b := newCtx(t)
	b.instructions("instructions.a", "You are the research desk. Use tools when they help.")
	b.instructions("instructions.b", "Answer in plain English.")
	run := 1
	b.user("run 1: what is the plan?")
	var prev []core.CacheSegment
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
		sent := f.requests()
		if out.RequestBytes != int64(len(sent[len(sent)-1])) {
			t.Fatalf("turn %d: reported %d request bytes, sent %d", turn, out.RequestBytes, len(sent[len(sent)-1]))
		}
		cur := out.Segments
		if len(cur) < len(testTools)+2 || cur[len(testTools)-1].Ref != "noop" || cur[len(testTools)].Kind != core.SegmentInstructions ||
			len(cur[len(testTools)].Entries) != 2 {
			t.Fatalf("turn %d: segments %+v", turn, cur)
		}
		if turn > 1 {
			n, _ := core.SharedPrefix(prev, cur)
			switch {
			case turn == instructionChangeTurn:
				if n != len(testTools) || !slices.Contains(cur[n].Keys, "instructions.b") {
					t.Fatalf("turn %d: first difference at %d (%+v), want the instructions", turn, n, cur[n])
				}
			case n != len(prev):
				t.Fatalf("turn %d repeats %d of the previous request's %d segments; segment %d was %+v, is %+v", turn, n, len(prev), n, prev[n], cur[n])
			}
		}
		prev = cur

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
		run++
		b.user(fmt.Sprintf("run %d: next question", run))
	}
}
