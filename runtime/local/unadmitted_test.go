package local

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
)

// A model answer or tool result whose whole text is a digest the universe
// lacks is text: the run completes, and nothing is retried.
func TestHost_HashShapedAnswersAndToolResultsAreText(t *testing.T) {
	digest := content.Sum([]byte("bytes nobody uploaded")).String()
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		if n == 0 {
			return callTools(ctx, b, "echo")
		}
		out, err := answer(ctx, b, digest)
		out.Entries[0].Preview = digest
		return out, err
	}}
	echo := funcTool{"echo", func(context.Context) (runtime.ToolOutput, error) {
		return runtime.ToolOutput{Content: []byte(digest)}, nil
	}}
	e := newEnv(t, adapter, echo)
	e.create("s1", "echo")
	if run := e.waitRun("s1", e.startRun("s1", digest)); run.Status != core.StatusCompleted {
		t.Fatalf("run %s, error %+v", run.Status, run.Error)
	}
	if adapter.count() != 2 {
		t.Fatalf("%d model calls, want 2", adapter.count())
	}
	var previews int
	for _, ev := range e.events("s1") {
		if bytes.Contains(ev.Payload, []byte(`"preview":"`+digest+`"`)) {
			previews++
		}
	}
	if previews < 2 {
		t.Fatalf("the digest text is in %d previews; the test does not exercise text shaped like a ref", previews)
	}
}

// A result the store refuses is retried a bounded number of times, never by
// calling the model again; then its run fails with a typed error, logged
// once, and the next run goes on.
func TestHost_AResultThatCannotBeAdmittedFailsItsRunAfterBoundedAttempts(t *testing.T) {
	adapter := &scriptAdapter{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		if n == 0 {
			// An answer naming bytes that were never stored: no append can take it.
			ghost := content.Ref([]byte("never stored"), content.MediaText, "")
			return provider.Output{Finish: "stop", Entries: []core.EntryInput{{Kind: core.EntryMessage, Role: core.RoleAssistant, Content: ghost, TokenEstimate: provider.Estimate([]byte("x"))}}}, nil
		}
		return answer(ctx, b, "fine")
	}}
	e := newEnv(t, adapter)
	var logs testenv.Buffer
	e.host.Close()
	e.logger = slog.New(slog.NewTextHandler(&logs, nil))
	e.start()
	e.create("s1")
	first, second := e.startRun("s1", "one"), e.startRun("s1", "two")
	run := e.waitRun("s1", first)
	if run.Status != core.StatusFailed || run.Error == nil || run.Error.Kind != core.FailureResultNotAdmitted {
		t.Fatalf("run %s, error %+v", run.Status, run.Error)
	}
	if run := e.waitRun("s1", second); run.Status != core.StatusCompleted {
		t.Fatalf("the next run: %s %+v", run.Status, run.Error)
	}
	if adapter.count() != 2 {
		t.Fatalf("%d model calls, want 2: a result that could not be stored made the model be called again", adapter.count())
	}
	out := logs.String()
	if n := strings.Count(out, "result not admitted; failing its run"); n != 1 {
		t.Fatalf("logged the give-up %d times:\n%s", n, out)
	}
	if n := strings.Count(out, "admitting result failed"); n != 1 {
		t.Fatalf("logged the first failure %d times:\n%s", n, out)
	}
}
