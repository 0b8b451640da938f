package runtime

import "github.com/cairn-agents/cairn/core"

// Holdable reports whether a host holds cmd while a compaction is pending,
// and behind the commands that arrived before it, instead of admitting it
// at once: the core would reject runs and context edits then
// (core.RejectCompactionPending), and a client expects them to wait, in
// order. Steering, cancellation and results (of work, or a host's FailRun)
// never wait: the core takes them during a compaction, and a run or the
// compaction itself may be waiting for them.
func Holdable(cmd core.Command) bool {
	switch cmd.(type) {
	case core.Steer, core.CancelRun, core.GenerationResult, core.ToolResult, core.SubmitToolOutput, core.DecideApproval, core.CompactionResult, core.TranscriptionResult, core.FailRun:
		return false
	}
	return true
}

// CompactionHolds appends the core's own steps first, since an automatic
// compaction may be due, and then reports whether a compaction is pending:
// held commands wait until it is not.
func CompactionHolds(h Host) bool {
	Flush(h)
	return h.Drive().State().Compaction != nil
}
