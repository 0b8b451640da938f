package runtime

import (
	"errors"
	"fmt"

	"github.com/cairn-agents/cairn/core"
)

// MaxResultAdmissions bounds how often a host tries to admit one result
// before it gives up on it (see Unadmitted): a result that cannot be stored
// must never be retried forever, nor its work be run again.
const MaxResultAdmissions = 5

// ResultStale reports whether a result was rejected as stale: the state
// stopped waiting for it (its run was cancelled, its compaction ended), so
// the host drops it.
func ResultStale(err error) bool {
	var rej *core.Rejection
	return errors.As(err, &rej) && rej.Kind == core.RejectStaleResult
}

// ResultRefused reports whether the core refused a result for good (any
// rejection but stale_result). Admitting it again cannot help, and running
// its work again would only repeat it (a paid model call each time), so the
// host admits Unadmitted in its place at once.
func ResultRefused(err error) bool {
	var rej *core.Rejection
	return errors.As(err, &rej) && rej.Kind != core.RejectStaleResult
}

// Unadmitted is the command a host admits instead of a result it could not
// admit: the result's run fails (a compaction fails), with a typed failure
// saying why. It returns nil for a command that is not a result.
func Unadmitted(result core.Command, reason error) core.Command {
	f := func(what string) core.Failure {
		return core.Failure{Kind: core.FailureResultNotAdmitted, Message: fmt.Sprintf("the %s could not be stored: %v", what, reason)}
	}
	switch c := result.(type) {
	case core.GenerationResult:
		return core.FailRun{AtMs: c.AtMs, RunID: c.RunID, Failure: f(fmt.Sprintf("answer of turn %d", c.Turn))}
	case core.ToolResult:
		return core.FailRun{AtMs: c.AtMs, RunID: c.RunID, Failure: f(fmt.Sprintf("result of tool call %s", c.CallID))}
	case core.TranscriptionResult:
		return core.FailRun{AtMs: c.AtMs, RunID: c.RunID, Failure: f("transcription")}
	case core.CompactionResult:
		failure := f("compaction result")
		failure.Kind = core.FailureCompaction
		return core.CompactionResult{AtMs: c.AtMs, CompactionID: c.CompactionID, ContextRevision: c.ContextRevision, Failure: &failure}
	}
	return nil
}

// AtTime is a host's result (or its FailRun) stamped with the time it is
// admitted.
func AtTime(cmd core.Command, at int64) core.Command {
	switch c := cmd.(type) {
	case core.GenerationResult:
		c.AtMs = at
		return c
	case core.ToolResult:
		c.AtMs = at
		return c
	case core.CompactionResult:
		c.AtMs = at
		return c
	case core.TranscriptionResult:
		c.AtMs = at
		return c
	case core.FailRun:
		c.AtMs = at
		return c
	}
	return cmd
}
