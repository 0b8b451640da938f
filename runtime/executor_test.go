package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
)

type brokenTool struct{}

func (brokenTool) Definition() provider.Tool { return provider.Tool{Name: "broken"} }
func (brokenTool) Invoke(context.Context, runtime.ToolEnv, json.RawMessage) (runtime.ToolOutput, error) {
	return runtime.ToolOutput{}, errors.New("blob store unreachable: connection refused")
}

// A tool failing at the runtime boundary gives the model only the constant
// "tool failed"; the executor logs the cause once, with the ids to find it,
// and without the call's arguments.
func TestInvokeToolLogsTheCauseOfAFailure(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	tools, err := runtime.NewTools(brokenTool{})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	x := &runtime.Executor{Blobs: blobs, Tools: tools, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
	args, err := blob.PutRef(ctx, blobs, []byte(`{"token":"s3cr3t-arg"}`), content.MediaJSON, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := x.InvokeTool(ctx, runtime.ToolSession{ID: "sess-1"}, "run-2", 3, core.ToolCall{CallID: "call-4", Name: "broken", Arguments: args})
	if err != nil || res.Status != core.CallFailed {
		t.Fatalf("InvokeTool = %+v, %v; want a failed call", res, err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("logged %d lines, want one:\n%s", len(lines), logs.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"level": "ERROR", "session": "sess-1", "run": "run-2", "turn": 3.0, "call": "call-4",
		"tool": "broken", "err": "blob store unreachable: connection refused"} {
		if rec[k] != want {
			t.Errorf("log %s = %v, want %v (%s)", k, rec[k], want, lines[0])
		}
	}
	if strings.Contains(logs.String(), "s3cr3t") {
		t.Fatalf("the log carries the call's arguments: %s", logs.String())
	}
}
