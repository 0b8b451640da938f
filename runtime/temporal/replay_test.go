package temporal_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/temporal"
)

// Re-record the histories after a deliberate, versioned workflow change:
//
//	CAIRN_TEST_TEMPORAL=127.0.0.1:7233 go test ./runtime/temporal -run TestReplay_RecordedHistories -record-histories
var recordHistories = flag.Bool("record-histories", false, "record testdata/histories from runs against the Temporal dev server")

const historyDir = "testdata/histories"

// Histories recorded from real runs replay with today's workflow code: a
// change that would break workflows already running (nondeterminism) fails
// here. Each is replayed several times, so code depending on map order is
// caught too. With -record-histories it records them first.
func TestReplay_RecordedHistories(t *testing.T) {
	if *recordHistories {
		recordScenarios(t)
	}
	files, err := filepath.Glob(filepath.Join(historyDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("%d recorded histories in %s, want the 4 scenarios", len(files), historyDir)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			for range 5 {
				r := worker.NewWorkflowReplayer()
				r.RegisterWorkflowWithOptions(temporal.SessionWorkflow, workflow.RegisterOptions{Name: temporal.WorkflowName})
				if err := r.ReplayWorkflowHistoryFromJSONFile(quietLogger{}, f); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// recordScenarios runs the scenarios against the dev server and writes
// their histories.
func recordScenarios(t *testing.T) {
	if err := os.MkdirAll(historyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	tools := blockTool{started: make(chan string, 64)}

	t.Run("parallel-tools-cancel", func(t *testing.T) {
		e := newEnvWith(t, inputModel{}, temporal.SessionArgs{HeartbeatTimeoutMs: 2000}, tools)
		e.create("s1", "block")
		run := e.startWithin("s1", "parallel", time.Minute)
		for range parallelCalls {
			<-tools.started
		}
		e.submitWithin("s1", core.CancelRun{AtMs: 10, RunID: run}, time.Minute)
		e.waitRun("s1", run)
		e.waitRun("s1", e.startWithin("s1", "hello", time.Minute))
		e.record(t, "s1", "", "parallel-tools-cancel")
	})
	t.Run("steer", func(t *testing.T) {
		e := newEnvWith(t, inputModel{}, temporal.SessionArgs{})
		e.create("s1")
		run := e.startWithin("s1", "slow", time.Minute)
		item := e.text("also this")
		e.submitWithin("s1", core.Steer{AtMs: 20, SteeringID: "st1", Input: []core.InputItem{item}}, time.Minute)
		if r := e.waitRun("s1", run); r.Turns != 2 {
			t.Fatalf("steered run took %d turns", r.Turns)
		}
		e.record(t, "s1", "", "steer")
	})
	t.Run("compaction", func(t *testing.T) {
		e := newEnvWith(t, inputModel{}, temporal.SessionArgs{})
		e.create("s1")
		e.waitRun("s1", e.startWithin("s1", "one", time.Minute))
		e.submitWithin("s1", core.RequestCompaction{AtMs: 30, CompactionID: "k1"}, time.Minute)
		e.waitRun("s1", e.startWithin("s1", "two", time.Minute)) // held until the compaction ends
		e.record(t, "s1", "", "compaction")
	})
	t.Run("continue-as-new", func(t *testing.T) {
		e := newEnvWith(t, inputModel{}, temporal.SessionArgs{ContinueAsNewAfter: 40})
		e.create("s1")
		first := e.runID("s1")
		for range 4 {
			e.waitRun("s1", e.startWithin("s1", "again", time.Minute))
		}
		for deadline := time.Now().Add(20 * time.Second); e.runID("s1") == first; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the workflow never continued as new")
			}
		}
		e.record(t, "s1", first, "continue-as-new")
	})
}

func (e *env) text(s string) core.InputItem {
	e.t.Helper()
	item, err := runtimeTextInput(e, s)
	if err != nil {
		e.t.Fatal(err)
	}
	return item
}

// record closes the session (unless runID names a run that already ended)
// and writes the workflow run's history as JSON.
func (e *env) record(t *testing.T, sessionID, runID, name string) {
	t.Helper()
	ctx := context.Background()
	id := temporal.WorkflowID(e.universe, sessionID)
	if runID == "" {
		e.submitWithin(sessionID, core.CloseSession{AtMs: 99, Reason: "recorded"}, time.Minute)
		if err := e.client.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	var h historypb.History
	it := e.client.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	raw, err := protojson.MarshalOptions{Multiline: true, Indent: " "}.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(historyDir, name+".json"), append(raw, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d events", name, len(h.Events))
}

func runtimeTextInput(e *env, s string) (core.InputItem, error) {
	return runtime.TextInput(context.Background(), e.st, s)
}
