package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// crashAnswer is the crash test's model: its answer depends only on what the
// request holds, so a call re-sent by the next worker after a crash (model
// calls are at-least-once) gets the same answer as the first attempt.
//
//	run 1: "Look up acorn and oak."  → slow_lookup(acorn) → slow_lookup(oak) → answer
//	run 2: "Anything else?"          → answer
func crashAnswer(body []byte) (answer string, toolResults int, err error) {
	var req struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return "", 0, err
	}
	users := 0
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			users++
		case "tool":
			toolResults++
		}
	}
	switch {
	case users == 1 && toolResults == 0:
		return toolCallResponse("chatcmpl-c1", "call_1", "slow_lookup", `{"q":"acorn"}`), toolResults, nil
	case users == 1 && toolResults == 1:
		return toolCallResponse("chatcmpl-c2", "call_2", "slow_lookup", `{"q":"oak"}`), toolResults, nil
	case users == 1 && toolResults == 2:
		return textResponse("chatcmpl-c3", "Acorn and oak are both trees."), toolResults, nil
	case users == 2 && toolResults == 2:
		return textResponse("chatcmpl-c4", "Nothing else."), toolResults, nil
	}
	return "", toolResults, fmt.Errorf("unexpected request: %d user messages, %d tool results", users, toolResults)
}

const (
	crashInput1  = "Look up acorn and oak."
	crashInput2  = "Anything else?"
	crashOutput1 = "Acorn and oak are both trees."
	crashOutput2 = "Nothing else."
)

// The crash test: worker processes are killed with SIGKILL at several points
// of a two-run session with tool rounds, a new worker is started each time,
// and the session ends exactly as an uncrashed run of the same script does:
// every run completes, seqs are contiguous, no event is written twice, and
// the log has the same shape event for event.
//
// The gateway gives session workflows a 3 s heartbeat timeout
// (--heartbeat-timeout), so a dead worker's model call, tool call or append
// is retried after seconds; workflow tasks left on the dead worker's sticky
// queue move to the shared queue after the SDK's 5 s sticky timeout, and one
// the worker was executing when it died is retried after Temporal's 10 s
// workflow task timeout.
func TestE2E_TemporalWorkerSIGKILLAtSeveralPoints(t *testing.T) {
	fake := newFakeChat(t, fakeKey)
	release := make(chan struct{}) // never closed before cleanup: a held request waits for its caller to die
	held := make(chan struct{}, 1)
	var holdAt atomic.Int32 // hold the first run-1 request with this many tool results; -1: none
	holdAt.Store(-1)
	fake.respondWith(func(_ int, body []byte) fakeStep {
		answer, tools, err := crashAnswer(body)
		if err != nil {
			t.Error(err)
			return fakeStep{body: `{"error":{"message":"fake: unexpected request"}}`}
		}
		step := fakeStep{body: answer}
		if !strings.Contains(answer, crashOutput2) && holdAt.CompareAndSwap(int32(tools), -1) {
			step.release = release
			held <- struct{}{}
		}
		return step
	})
	d := newTemporalDeployment(t, fake, "--heartbeat-timeout", "3s")
	t.Cleanup(func() { close(release) }) // runs before the fake server closes
	c := d.client()
	ctx := context.Background()
	newSession := func(id string) {
		t.Helper()
		if _, err := c.CreateSession(ctx, api.CreateSessionParams{SessionID: id, Model: fakeModel(), Instructions: "Be brief.", Tools: []string{"slow_lookup"}}); err != nil {
			t.Fatal(err)
		}
	}
	start := func(sid, text string) string {
		t.Helper()
		r, err := c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: textInput(text)})
		if err != nil {
			t.Fatal(err)
		}
		return r.RunID
	}
	checkRun := func(sid, runID, output string) {
		t.Helper()
		if got := waitRun(t, c, sid, runID); got.Status != core.StatusCompleted || got.Output == nil || got.Output.VisibleText() != output {
			t.Fatalf("session %s run %s = %s", sid, runID, mustJSON(t, got))
		}
	}

	// The reference: the same script, nothing killed.
	began := time.Now()
	generation := 1
	w := d.startWorker(t, "worker-1", workerBin)
	newSession("reference")
	checkRun("reference", start("reference", crashInput1), crashOutput1)
	checkRun("reference", start("reference", crashInput2), crashOutput2)
	t.Logf("reference session: %s", time.Since(began).Round(time.Millisecond))

	restart := func(point string) {
		t.Helper()
		began := time.Now()
		w.kill(t)
		generation++
		w = d.startWorker(t, fmt.Sprintf("worker-%d", generation), workerBin)
		t.Logf("killed the worker %s; worker-%d polls after %s", point, generation, time.Since(began).Round(time.Millisecond))
	}

	began = time.Now()
	holdAt.Store(2) // (a) below: the model call that follows both tool results
	newSession("crashed")
	printed := w.mark()
	run1 := start("crashed", crashInput1)

	// (b) Mid tool batch: call_1's tools.call_started is in the log and the
	// worker is sleeping in slow_lookup. The next worker runs the call again
	// once the heartbeat timeout expires.
	w.waitLine(t, printed, "slow_lookup started acorn", 60*time.Second)
	waitEvent(t, c, "crashed", isEvent(core.KindToolCallStarted, "call_1"))
	restart("mid tool batch (slow_lookup sleeping)")

	// (c) Between an append and the next step, best effort: as soon as the
	// log shows call_1's tools.call_completed (appended with the batch and
	// turn completion), the worker is killed. It is then about to plan turn
	// 2, appending turn.started… (an Append activity), or is already in turn
	// 2's model call, or is handling the workflow task between the two.
	waitEvent(t, c, "crashed", isEvent(core.KindToolCallCompleted, "call_1"))
	restart("right after tools.call_completed")

	// (a) Mid model call: the fake holds the model call that follows both
	// tool results; the next worker sends it again and gets the answer.
	select {
	case <-held:
	case <-time.After(60 * time.Second):
		t.Fatal("the third model call of run 1 never arrived")
	}
	restart("mid model call")
	checkRun("crashed", run1, crashOutput1)

	// (d) Idle between runs: the worker that ran the workflow last is gone
	// when run 2 is submitted; the update waits for another worker.
	restart("while the session is idle")
	checkRun("crashed", start("crashed", crashInput2), crashOutput2)
	t.Logf("crashed session: %s", time.Since(began).Round(time.Millisecond))
	// The kills at (b) and (a) hit running activities: Temporal retried a
	// tool call and a model call after their heartbeats stopped. What (c)
	// hit shows here too when it was an activity.
	retried := map[string]int{}
	for _, a := range d.activities(t, "crashed") {
		if a.attempt > 1 {
			t.Logf("retried: %s, completed by attempt %d after %q", a.name, a.attempt, a.lastFailure)
			if strings.Contains(strings.ToLower(a.lastFailure), "heartbeat") {
				retried[a.name]++
			}
		}
	}
	if retried["InvokeTool"] == 0 || retried["Generate"] == 0 {
		t.Errorf("no tool call or no model call was retried after a heartbeat timeout: %v", retried)
	}

	ref, crashed := allEvents(t, c, "reference"), allEvents(t, c, "crashed")
	for name, evs := range map[string][]api.EventView{"reference": ref, "crashed": crashed} {
		for i, ev := range evs {
			if ev.Seq != int64(i+1) {
				t.Fatalf("%s: event %d has seq %d", name, i+1, ev.Seq)
			}
		}
		if dup := duplicated(t, evs); dup != "" {
			t.Fatalf("%s: event written twice: %s", name, dup)
		}
	}
	n := kinds(crashed)
	if n[core.KindRunCompleted] != 2 || n[core.KindTurnGenerationCompleted] != 4 || n[core.KindToolCallCompleted] != 2 || n[core.KindRunFailed] != 0 {
		t.Fatalf("crashed session's events: %v", n)
	}
	for _, ev := range crashed {
		if ev.Kind == core.KindToolCallCompleted && !strings.Contains(string(ev.Payload), `"status":"ok"`) {
			t.Fatalf("tool call did not complete ok: %s", ev.Payload)
		}
	}
	want, got := shape(t, ref), shape(t, crashed)
	if !slices.Equal(got, want) {
		for i := range max(len(want), len(got)) {
			var w, g string
			if i < len(want) {
				w = want[i]
			}
			if i < len(got) {
				g = got[i]
			}
			if w != g {
				t.Errorf("event %d differs:\n  uncrashed: %s\n  crashed:   %s", i+1, w, g)
			}
		}
		t.Fatalf("the crashed session's log (%d events) differs from the uncrashed one (%d)", len(got), len(want))
	}
	// The held model call really was sent twice: at least once more than
	// the uncrashed run's four calls per session.
	if reqs := len(fake.bodies()); reqs < 4+5 {
		t.Fatalf("%d model requests, want at least 9 (4 uncrashed, 4 + a re-sent one crashed)", reqs)
	}
}

// duplicated returns a description of the first event that repeats another
// one's identity (kind, run, turn, call, steering, entries), or "".
func duplicated(t *testing.T, evs []api.EventView) string {
	t.Helper()
	seen := map[string]int64{}
	for _, ev := range evs {
		var p struct {
			RunID      string `json:"runId"`
			Turn       int    `json:"turn"`
			CallID     string `json:"callId"`
			SteeringID string `json:"steeringId"`
			Entries    []struct {
				ID string `json:"entryId"`
			} `json:"entries"`
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("%s run=%s turn=%d call=%s steering=%s entries=%v", ev.Kind, p.RunID, p.Turn, p.CallID, p.SteeringID, p.Entries)
		if prev, ok := seen[key]; ok {
			return fmt.Sprintf("%s at seqs %d and %d", key, prev, ev.Seq)
		}
		seen[key] = ev.Seq
	}
	return ""
}

// shape is a session's log with what differs between two sessions of the
// same script normalized: the session id, run and steering ids by order
// of first appearance, and request sizes (they include a session-derived
// cache key). Kinds, joins and every other payload byte (content
// digests, entry ids, turn numbers, tool call statuses, fingerprints,
// usage) are kept; seqs are the positions, observation times are dropped.
func shape(t *testing.T, evs []api.EventView) []string {
	t.Helper()
	ids := map[string]string{}
	name := func(prefix, id string) string {
		if id == "" {
			return ""
		}
		if _, ok := ids[id]; !ok {
			ids[id] = fmt.Sprintf("<%s%d>", prefix, len(ids)+1)
		}
		return ids[id]
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) { // ids are named in a stable order
				val := x[k]
				s, isString := val.(string)
				switch {
				case isString && k == "sessionId":
					x[k] = "<session>"
				case isString && (k == "runId" || k == "steeringId"):
					x[k] = name(k, s)
				case k == "requestBytes":
					// The request carries a prompt_cache_key derived from the
					// session id, so its length differs between sessions; the
					// segments it is measured over are compared by digest.
					x[k] = "<requestBytes>"
				default:
					x[k] = walk(val)
				}
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		}
		return v
	}
	out := make([]string, len(evs))
	for i, ev := range evs {
		var payload any
		if err := json.Unmarshal(ev.Payload, &payload); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // keep the <runId1> placeholders readable in a diff
		if err := enc.Encode(walk(payload)); err != nil {
			t.Fatal(err)
		}
		joins := make([]string, len(ev.Joins))
		for j, join := range ev.Joins {
			for id, n := range ids {
				join = strings.ReplaceAll(join, id, n)
			}
			joins[j] = join
		}
		out[i] = fmt.Sprintf("%s %v %s", ev.Kind, joins, strings.TrimSpace(b.String()))
	}
	return out
}

// The crash test's log checks can fail: shape keeps everything but the ids,
// and duplicated finds an event written twice.
func TestE2E_CrashChecksSeeDifferences(t *testing.T) {
	log := func(runID, sessionID, digest string) []api.EventView {
		return []api.EventView{
			{Seq: 1, Kind: core.KindSessionOpened, Payload: json.RawMessage(`{"sessionId":"` + sessionID + `","config":{}}`)},
			{Seq: 2, Kind: core.KindRunAccepted, Joins: []string{"run:" + runID}, Payload: json.RawMessage(`{"runId":"` + runID + `","input":[]}`)},
			{Seq: 3, Kind: core.KindTurnGenerationCompleted, ObservedAtMs: int64(len(runID)), Joins: []string{"run:" + runID, "turn:" + runID + "/1"},
				Payload: json.RawMessage(`{"runId":"` + runID + `","turn":1,"finish":"stop","usage":{"ref":"` + digest + `"}}`)},
		}
	}
	a, b := shape(t, log("run_a", "s1", "sha256:00")), shape(t, log("run_bb", "s2", "sha256:00"))
	if !slices.Equal(a, b) {
		t.Fatalf("logs differing only in ids have different shapes:\n%v\n%v", a, b)
	}
	if c := shape(t, log("run_a", "s1", "sha256:01")); slices.Equal(a, c) {
		t.Fatal("a different digest does not change the shape")
	}
	evs := log("run_a", "s1", "sha256:00")
	if dup := duplicated(t, evs); dup != "" {
		t.Fatalf("no duplicate, yet: %s", dup)
	}
	again := evs[2]
	again.Seq = 4
	if dup := duplicated(t, append(evs, again)); !strings.Contains(dup, core.KindTurnGenerationCompleted) {
		t.Fatalf("a second generation_completed of the same turn is not reported: %q", dup)
	}
}
