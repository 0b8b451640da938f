package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
)

// temporalDeployment is Cairn on Temporal as a user runs it: a migrated
// database, a universe and its key, `cairn serve --temporal` as the API
// gateway, and worker processes on a task queue of the test's own.
type temporalDeployment struct {
	pg, temporal, queue, config string
	universe, key               string
	srv                         *server
}

// newTemporalDeployment migrates a fresh database, creates a fresh universe
// (workflow ids are {universe}/{session} in a namespace every test shares)
// and starts the gateway with extra serve flags. Workers are started apart.
func newTemporalDeployment(t *testing.T, fake *fakeChat, serveFlags ...string) *temporalDeployment {
	t.Helper()
	d := &temporalDeployment{pg: testenv.PostgresURL(t), temporal: testenv.TemporalAddress(t)}
	d.config = writeProviderConfig(t, t.TempDir(), fake)
	env := []string{"CAIRN_POSTGRES=" + d.pg}
	if _, err := runCairn(t, env, "migrate"); err != nil {
		t.Fatal(err)
	}
	d.universe, d.queue = "e2e-"+randomHex(6), "e2e-"+randomHex(6)
	d.key = createUniverse(t, env, d.universe)
	d.srv = startServeWith(t, append([]string{"--postgres", d.pg, "--temporal", d.temporal, "--task-queue", d.queue}, serveFlags...))
	return d
}

// startWorker starts `cairn worker` (bin cairnBin) or the test worker (bin
// workerBin, which takes the same flags), with extra flags, and waits until
// it polls.
func (d *temporalDeployment) startWorker(t *testing.T, name, bin string, extra ...string) *proc {
	t.Helper()
	args := append([]string{"--postgres", d.pg, "--temporal", d.temporal, "--task-queue", d.queue, "--config", d.config}, extra...)
	if bin == cairnBin {
		args = append([]string{"worker"}, args...)
	}
	return startProc(t, name, bin, args, []string{"FAKE_CHAT_KEY=" + fakeKey}, "worker polling "+d.queue)
}

func (d *temporalDeployment) client() *api.Client { return d.srv.client().WithAPIKey(d.key) }

// activityTypes lists the activities the session's workflow scheduled, read
// from its Temporal history (the current run of the workflow id).
func (d *temporalDeployment) activityTypes(t *testing.T, sessionID string) []string {
	t.Helper()
	var out []string
	for _, a := range d.activities(t, sessionID) {
		out = append(out, a.name)
	}
	return out
}

// activity is one activity of a workflow's history: its type, the attempt
// that completed it, and the failure of the attempt before, if any.
type activity struct {
	name        string
	attempt     int32
	lastFailure string
}

func (d *temporalDeployment) activities(t *testing.T, sessionID string) []activity {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: d.temporal})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []activity
	byID := map[int64]int{}
	it := c.GetWorkflowHistory(ctx, d.universe+"/"+sessionID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			byID[ev.GetEventId()] = len(out)
			out = append(out, activity{name: a.GetActivityType().GetName()})
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			i := byID[a.GetScheduledEventId()]
			out[i].attempt = a.GetAttempt()
			if f := a.GetLastFailure(); f != nil {
				out[i].lastFailure = f.GetMessage()
			}
		}
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// waitEvent long-polls the session's log until an event satisfies match.
func waitEvent(t *testing.T, c *api.Client, sessionID string, match func(api.EventView) bool) api.EventView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var after int64
	for {
		page, err := c.ReadEvents(ctx, api.EventsReadParams{SessionID: sessionID, After: after, WaitMs: 2000})
		if err != nil {
			t.Fatalf("waiting for an event: %v", err)
		}
		for _, ev := range page.Events {
			if match(ev) {
				return ev
			}
			after = ev.Seq
		}
	}
}

// isEvent matches an event of kind whose payload has the given callId ("" matches any).
func isEvent(kind, callID string) func(api.EventView) bool {
	return func(ev api.EventView) bool {
		if ev.Kind != kind {
			return false
		}
		var p struct {
			CallID string `json:"callId"`
		}
		_ = json.Unmarshal(ev.Payload, &p)
		return callID == "" || p.CallID == callID
	}
}

func textInput(s string) []api.InputPart { return []api.InputPart{{Type: "text", Text: s}} }

// The Temporal deployment end to end: `cairn migrate`, `cairn universe
// create`, `cairn serve --temporal` and two `cairn worker`s. A run takes a
// tool round (granted, not registered in the binary: the InvokeTool activity
// answers "unavailable"), is steered while its second model call is in
// flight, and ends; a second run follows. session/read is answered by the
// workflow's status query.
func TestE2E_TemporalDeploymentServeAndWorkers(t *testing.T) {
	fake := newFakeChat(t, fakeKey)
	hold := make(chan struct{})
	fake.script(
		fakeStep{body: toolCallResponse("chatcmpl-t1", "call_1", "lookup", `{"q":"acorn"}`)},
		fakeStep{body: textResponse("chatcmpl-t2", "First draft."), release: hold},
		fakeStep{body: textResponse("chatcmpl-t3", "Acorn 2.0, released on Monday.")},
		fakeStep{body: textResponse("chatcmpl-t4", "Nothing else is new.")},
	)
	d := newTemporalDeployment(t, fake)
	d.startWorker(t, "worker-1", cairnBin)
	d.startWorker(t, "worker-2", cairnBin)
	c := d.client()
	ctx := context.Background()

	created, err := c.CreateSession(ctx, api.CreateSessionParams{SessionID: "notes", Model: fakeModel(), Instructions: "Be brief.", Tools: []string{"lookup"}})
	if err != nil {
		t.Fatal(err)
	}
	sid := created.SessionID
	run1, err := c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: textInput("What is new in Acorn?")})
	if err != nil {
		t.Fatal(err)
	}
	if run1.Status != core.StatusRunning {
		t.Fatalf("run 1 admitted as %q, want running", run1.Status)
	}
	waitArrived(t, fake, 1) // the second model call is in flight
	read, err := c.ReadSession(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if read.ActiveRun == nil || read.ActiveRun.RunID != run1.RunID || read.ActiveRun.Status != core.StatusRunning {
		t.Fatalf("session/read during run 1: %s", mustJSON(t, read))
	}
	steer, err := c.Steer(ctx, api.SteerParams{SessionID: sid, Input: textInput("Mention the release day.")})
	if err != nil {
		t.Fatal(err)
	}
	if steer.RunID != run1.RunID || steer.SteeringID == "" {
		t.Fatalf("steer: %+v", steer)
	}
	close(hold)
	got := waitRun(t, c, sid, run1.RunID)
	if got.Status != core.StatusCompleted || got.Turns != 3 || got.Output == nil || got.Output.VisibleText() != "Acorn 2.0, released on Monday." {
		t.Fatalf("run 1 = %s", mustJSON(t, got))
	}

	run2, err := c.StartRun(ctx, api.RunStartParams{SessionID: sid, Input: textInput("Anything else?")})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitRun(t, c, sid, run2.RunID); got.Status != core.StatusCompleted || got.Turns != 1 || got.Output == nil || got.Output.VisibleText() != "Nothing else is new." {
		t.Fatalf("run 2 = %s", mustJSON(t, got))
	}

	// What the model was sent: the tool result, then the steering at the
	// turn boundary after the call it arrived during.
	reqs := fake.bodies()
	if len(reqs) != 4 {
		t.Fatalf("%d provider requests, want 4", len(reqs))
	}
	if !bytes.Contains(reqs[1], []byte(`"role":"tool","tool_call_id":"call_1"`)) {
		t.Fatalf("second request lacks the tool result: %s", reqs[1])
	}
	if bytes.Contains(reqs[1], []byte("Mention the release day.")) || !bytes.Contains(reqs[2], []byte("Mention the release day.")) {
		t.Fatalf("the steering is not in exactly the requests after it: %s", reqs[2])
	}

	evs := allEvents(t, c, sid)
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i+1, ev.Seq)
		}
	}
	n := kinds(evs)
	want := map[string]int{
		core.KindSessionOpened: 1, core.KindRunAccepted: 2, core.KindRunSteeringAccepted: 1,
		core.KindRunCompleted: 2, core.KindTurnStarted: 4, core.KindTurnGenerationCompleted: 4, core.KindTurnCompleted: 4,
		core.KindToolBatchStarted: 1, core.KindToolCallStarted: 1, core.KindToolCallCompleted: 1, core.KindToolBatchCompleted: 1,
	}
	for kind, count := range want {
		if n[kind] != count {
			t.Errorf("%d %s events, want %d (all: %v)", n[kind], kind, count, n)
		}
	}
	for _, ev := range evs {
		if ev.Kind != core.KindToolCallCompleted {
			continue
		}
		var p core.ToolCallCompleted
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.CallID != "call_1" || p.Status != core.CallUnavailable || p.Result.Digest != core.ToolUnavailableRef.Digest {
			t.Fatalf("tool call completed as %s", ev.Payload)
		}
	}

	// session/read comes from the workflow's status query and agrees with the log.
	read, err = c.ReadSession(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if read.SessionID != sid || read.Status != core.SessionStatusOpen || read.Model != fakeModel() || !slices.Equal(read.Tools, []string{"lookup"}) ||
		read.Head != int64(len(evs)) || read.ActiveRun != nil || len(read.QueuedRuns) != 0 || read.ContextRevision == 0 {
		t.Fatalf("session/read after both runs: %s (log has %d events)", mustJSON(t, read), len(evs))
	}

	// The tool call went through the InvokeTool activity; the model calls
	// through Generate, one each (nothing crashed, nothing was retried).
	acts := d.activityTypes(t, sid)
	count := func(name string) (k int) {
		for _, a := range acts {
			if a == name {
				k++
			}
		}
		return k
	}
	if count("InvokeTool") != 1 || count("Generate") != 4 || count("Rehydrate") != 1 {
		t.Fatalf("activities scheduled: %v", acts)
	}
}
