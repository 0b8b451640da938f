package temporal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/transcribe"
	"github.com/cairn-agents/cairn/runtime"
	ctemporal "github.com/cairn-agents/cairn/runtime/temporal"
	"github.com/cairn-agents/cairn/store"
)

// fakeTranscriber answers with text, or with err when set.
type fakeTranscriber struct {
	mu   sync.Mutex
	reqs []transcribe.Request
	err  error
}

func (f *fakeTranscriber) Transcribe(_ context.Context, req transcribe.Request) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	if f.err != nil {
		return "", f.err
	}
	return "Buy acorns.", nil
}

var audioBytes = []byte("\x00\x00\x00\x20ftypM4A the memo's audio bytes")

// transcribeRun runs a session whose one run has audio input, in the SDK's
// test environment, and returns the log, the model's requests and the
// encoded input of every Transcribe activity.
func transcribeRun(t *testing.T, tr *fakeTranscriber) ([]core.Event, []provider.Request, []map[string]json.RawMessage) {
	t.Helper()
	var reqs []provider.Request
	adapter := &script{fn: func(ctx context.Context, n int, b blob.Store, req provider.Request) (provider.Output, error) {
		reqs = append(reqs, req)
		return answer(ctx, b, "noted")
	}}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	blobs := blob.NewMemory()
	st := memStore{Memory: store.NewMemory(blobs), Store: blobs}
	reg, err := runtime.NewTools()
	if err != nil {
		t.Fatal(err)
	}
	acts := ctemporal.NewActivities(func(context.Context, string) (ctemporal.Store, error) { return st, nil },
		map[string]provider.Adapter{core.APIChatCompletions: adapter}, reg)
	acts.Transcriber = tr
	env.RegisterWorkflowWithOptions(ctemporal.SessionWorkflow, workflow.RegisterOptions{Name: ctemporal.WorkflowName})
	env.RegisterActivity(acts)
	var inputs []map[string]json.RawMessage
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		if info.ActivityType.Name != "Transcribe" {
			return
		}
		var in map[string]json.RawMessage
		if err := args.Get(&in); err != nil {
			t.Errorf("decoding Transcribe input: %v", err)
		}
		inputs = append(inputs, in)
	})

	ctx := context.Background()
	ref, err := blob.PutRef(ctx, st, audioBytes, "audio/mp4", "")
	if err != nil {
		t.Fatal(err)
	}
	text, err := runtime.TextInput(ctx, st, "what does it say?")
	if err != nil {
		t.Fatal(err)
	}
	cfg := unitConfig
	cfg.Transcription = &core.Transcription{ProviderID: "openai", Model: "whisper-1"}
	var openErr, runErr, closeErr error
	env.RegisterDelayedCallback(func() { submit(t, env, core.OpenSession{AtMs: 1, SessionID: "s1", Config: cfg}, &openErr) }, 0)
	env.RegisterDelayedCallback(func() {
		submit(t, env, core.StartRun{AtMs: 2, RunID: "r1", Input: []core.InputItem{text,
			{Kind: core.InputAudio, Filename: "memo.m4a", Content: ref, Preview: "[audio memo.m4a]"}}}, &runErr)
	}, time.Second)
	env.RegisterDelayedCallback(func() { submit(t, env, core.CloseSession{AtMs: 3}, &closeErr) }, time.Hour)
	env.ExecuteWorkflow(ctemporal.WorkflowName, ctemporal.SessionArgs{Universe: "u", SessionID: "s1"})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	if openErr != nil || runErr != nil || closeErr != nil {
		t.Fatalf("updates: %v, %v, %v", openErr, runErr, closeErr)
	}
	evs, err := st.ReadAfter(ctx, "s1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs, reqs, inputs
}

// On Temporal the transcription is an activity whose input is ids only; the
// audio is read from the store inside it, and the turn that follows sends
// the transcript with the audio as its provenance.
func TestWorkflow_AudioIsTranscribedByAnActivityThatTakesIdsOnly(t *testing.T) {
	tr := &fakeTranscriber{}
	evs, reqs, inputs := transcribeRun(t, tr)
	n := countEvents(evs)
	if n[core.KindRunTranscriptionRequested] != 1 || n[core.KindRunTranscriptionCompleted] != 1 || n[core.KindRunCompleted] != 1 {
		t.Fatalf("events %v", n)
	}
	if len(tr.reqs) != 1 || !bytes.Equal(tr.reqs[0].Audio, audioBytes) || tr.reqs[0].Filename != "memo.m4a" ||
		tr.reqs[0].Model != "whisper-1" || tr.reqs[0].ProviderID != "openai" || tr.reqs[0].MediaType != "audio/mp4" {
		t.Fatalf("transcriber requests %+v", tr.reqs)
	}
	if len(inputs) != 1 {
		t.Fatalf("%d Transcribe activities", len(inputs))
	}
	var keys []string
	for k, v := range inputs[0] {
		keys = append(keys, k)
		if bytes.Contains(v, []byte("audio bytes")) {
			t.Fatalf("activity input %s carries the audio", k)
		}
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "head,runId,sessionId,universe" {
		t.Fatalf("Transcribe input fields %v", keys)
	}
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	var found bool
	for _, e := range reqs[0].Entries {
		if core.IsTranscript(e.Content) && e.ProvenanceRef != nil && e.ProvenanceRef.MediaType == "audio/mp4" && e.Role == core.RoleUser {
			found = true
		}
	}
	if !found {
		t.Fatalf("model request entries %+v carry no transcript", reqs[0].Entries)
	}
}

func TestWorkflow_ATerminalTranscriptionErrorFailsTheRun(t *testing.T) {
	tr := &fakeTranscriber{err: &provider.Error{Status: 400, Message: "Invalid file format."}}
	evs, reqs, _ := transcribeRun(t, tr)
	var failed *core.RunFailed
	for _, ev := range evs {
		if ev.Kind == core.KindRunFailed {
			failed = &core.RunFailed{}
			if err := json.Unmarshal(ev.Payload, failed); err != nil {
				t.Fatal(err)
			}
		}
	}
	if failed == nil || failed.Error.Kind != core.FailureTranscription || !strings.Contains(failed.Error.Message, "memo.m4a") ||
		!strings.Contains(failed.Error.Message, "Invalid file format.") || len(reqs) != 0 || len(tr.reqs) != 1 {
		t.Fatalf("run.failed %+v, %d model requests, %d transcription attempts", failed, len(reqs), len(tr.reqs))
	}
}

func countEvents(evs []core.Event) map[string]int {
	n := map[string]int{}
	for _, ev := range evs {
		n[ev.Kind]++
	}
	return n
}
