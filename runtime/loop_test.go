package runtime_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
)

// fakeHost records what the loop asks of it; its log is a slice.
type fakeHost struct {
	drive    *core.Drive
	log      []core.Event
	failNext bool // the next append fails
	calls    []string
}

func (h *fakeHost) Drive() *core.Drive { return h.drive }
func (h *fakeHost) NowMs() int64       { return 1 }
func (h *fakeHost) Append(in core.Intent) error {
	h.calls = append(h.calls, "append")
	if h.failNext || in.ExpectedHead != int64(len(h.log)) {
		h.failNext = false
		h.drive.Abandon()
		return errors.New("append failed")
	}
	events := make([]core.Event, len(in.Proposals))
	for i, p := range in.Proposals {
		events[i] = p.Committed(in.ExpectedHead + int64(i) + 1)
	}
	h.log = append(h.log, events...)
	return h.drive.Committed(events)
}
func (h *fakeHost) Generate(core.GenerateWork)            { h.calls = append(h.calls, "generate") }
func (h *fakeHost) InvokeTool(string, int, core.ToolCall) { h.calls = append(h.calls, "tool") }
func (h *fakeHost) Compact(core.CompactWork)              { h.calls = append(h.calls, "compact") }
func (h *fakeHost) Transcribe(core.TranscribeWork)        { h.calls = append(h.calls, "transcribe") }

func openSession(t *testing.T) (*fakeHost, core.StartRun) {
	t.Helper()
	h := &fakeHost{drive: core.NewDrive(core.NewState())}
	cfg := core.SessionConfig{Model: core.ModelSelection{ProviderID: "test", APIKind: core.APIChatCompletions, Model: "m"}}
	if _, err := runtime.AdmitAndAppend(h, core.OpenSession{AtMs: 1, SessionID: "s1", Config: cfg}); err != nil {
		t.Fatal(err)
	}
	item, err := runtime.TextInput(context.Background(), blob.NewMemory(), "hello")
	if err != nil {
		t.Fatal(err)
	}
	h.calls = nil
	return h, core.StartRun{AtMs: 1, RunID: "run_1", Input: []core.InputItem{item}}
}

// A command is answered once its events are in the log, and the model is
// called only after the turn that asks for it is in the log too.
func TestLoop_AppendsBeforeAnsweringAndBeforeDispatching(t *testing.T) {
	h, start := openSession(t)
	adm, err := runtime.AdmitAndAppend(h, start)
	if err != nil {
		t.Fatal(err)
	}
	if head := h.drive.State().Head; head != int64(len(h.log)) || adm.RunID != "run_1" {
		t.Fatalf("admitted %+v with the state at %d and the log at %d", adm, head, len(h.log))
	}
	before := len(h.log)
	if err := runtime.Pump(h); err != nil {
		t.Fatal(err)
	}
	if got := h.calls[len(h.calls)-1]; got != "generate" || len(h.log) == before {
		t.Fatalf("pump did %v, appending %d events; want appends, then generate", h.calls, len(h.log)-before)
	}
	if !slices.Contains(h.calls[:len(h.calls)-1], "append") {
		t.Fatalf("pump did %v: generate before any append", h.calls)
	}
}

// An append that fails stops the loop: nothing is dispatched and the state
// does not move; the next pump decides again.
func TestLoop_FailedAppendDispatchesNothing(t *testing.T) {
	h, start := openSession(t)
	h.failNext = true
	if _, err := runtime.AdmitAndAppend(h, start); err == nil {
		t.Fatal("admitted a command whose append failed")
	}
	if h.drive.State().Run("run_1") != nil {
		t.Fatal("the state moved on a failed append")
	}
	if _, err := runtime.AdmitAndAppend(h, start); err != nil {
		t.Fatal(err)
	}
	h.calls, h.failNext = nil, true
	if err := runtime.Pump(h); err == nil || slices.Contains(h.calls, "generate") {
		t.Fatalf("pump with a failing append returned %v after %v", err, h.calls)
	}
	if err := runtime.Pump(h); err != nil || h.calls[len(h.calls)-1] != "generate" {
		t.Fatalf("pump after the failure returned %v after %v", err, h.calls)
	}
}
