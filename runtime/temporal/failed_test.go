package temporal

import (
	"errors"
	"reflect"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
)

// The results the workflow admits for work whose activity failed are the
// ones it admitted before they came from runtime's shared functions: a
// change here changes what running workflows append, which needs a
// workflow version.
func TestFailedWorkResultsAreUnchanged(t *testing.T) {
	retryable := temporal.NewApplicationError("provider error (retryable, HTTP 429): slow down", errRetryableProvider)
	other := errors.New("activity timed out")
	gen := core.GenerateWork{RunID: "run_1", Turn: 2}
	cmp := core.CompactWork{CompactionID: "c_1", ContextRevision: 7}
	tr := core.TranscribeWork{RunID: "run_1"}
	cases := []struct {
		name      string
		got, want any
	}{
		{"generation", failedGeneration(gen, other), core.GenerationResult{RunID: "run_1", Turn: 2, Finish: "error",
			Failure: &core.Failure{Kind: "model_call_failed", Message: "the model call failed at the runtime boundary", Ref: &core.ModelFailedRef}}},
		{"generation, retryable", failedGeneration(gen, retryable), core.GenerationResult{RunID: "run_1", Turn: 2, Finish: "error",
			Failure: &core.Failure{Kind: "provider_error", Message: "provider error (retryable, HTTP 429): slow down"}}},
		{"compaction", failedCompaction(cmp, other), core.CompactionResult{CompactionID: "c_1", ContextRevision: 7,
			Failure: &core.Failure{Kind: core.FailureCompaction, Message: "the compaction call failed at the runtime boundary"}}},
		{"compaction, retryable", failedCompaction(cmp, retryable), core.CompactionResult{CompactionID: "c_1", ContextRevision: 7,
			Failure: &core.Failure{Kind: core.FailureCompaction, Message: "provider error (retryable, HTTP 429): slow down"}}},
		{"transcription", failedTranscription(tr, other), core.TranscriptionResult{RunID: "run_1",
			Failure: &core.Failure{Kind: core.FailureTranscription, Message: "the transcription call failed at the runtime boundary"}}},
		{"transcription, retryable", failedTranscription(tr, retryable), core.TranscriptionResult{RunID: "run_1",
			Failure: &core.Failure{Kind: core.FailureTranscription, Message: "provider error (retryable, HTTP 429): slow down"}}},
		{"tool call", runtime.FailedToolCall("run_1", 2, core.ToolCall{CallID: "call_1"}), core.ToolResult{RunID: "run_1", Turn: 2, CallID: "call_1", Status: core.CallFailed,
			Result: core.EntryInput{Content: core.ToolFailedRef, TokenEstimate: core.TokenEstimate{Tokens: int64(len(core.ToolFailedBytes)+3)/4 + 4, Quality: core.EstimateHeuristic}, Preview: "tool failed"}}},
	}
	for _, c := range cases {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, c.got, c.want)
		}
	}
}
