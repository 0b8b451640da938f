package temporal_test

import (
	"context"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime/temporal"
)

// A model answer whose whole text is a digest nobody stored is text; an
// answer the store cannot take (it names bytes that were never stored) fails
// its run with a typed error instead of calling the model again and again;
// the next run goes on.
func TestTemporal_AResultThatCannotBeAdmittedFailsItsRunOnce(t *testing.T) {
	digest := content.Sum([]byte("bytes nobody uploaded")).String()
	adapter := &script{fn: func(ctx context.Context, n int, b blob.Store, _ provider.Request) (provider.Output, error) {
		switch n {
		case 0:
			return answer(ctx, b, digest) // its preview is the digest text
		case 1:
			ghost := content.Ref([]byte("never stored"), content.MediaText, "")
			return provider.Output{Finish: "stop", Entries: []core.EntryInput{{Kind: core.EntryMessage, Role: core.RoleAssistant, Content: ghost, TokenEstimate: provider.Estimate([]byte("x"))}}}, nil
		}
		return answer(ctx, b, "fine")
	}}
	e := newEnv(t, adapter, temporal.SessionArgs{})
	e.create("s1")
	if run := e.waitRun("s1", e.start("s1", digest)); run.Status != core.StatusCompleted {
		t.Fatalf("the digest-shaped answer: run %s %+v", run.Status, run.Error)
	}
	run := e.waitRun("s1", e.start("s1", "two"))
	if run.Status != core.StatusFailed || run.Error == nil || run.Error.Kind != core.FailureResultNotAdmitted {
		t.Fatalf("the unstorable answer: run %s %+v", run.Status, run.Error)
	}
	if run := e.waitRun("s1", e.start("s1", "three")); run.Status != core.StatusCompleted {
		t.Fatalf("the next run: %s %+v", run.Status, run.Error)
	}
	if adapter.count() != 3 {
		t.Fatalf("%d model calls, want 3: a result that could not be stored made the model be called again", adapter.count())
	}
}
