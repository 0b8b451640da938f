package runtime_test

import (
	"testing"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
)

// Commands the core rejects while a compaction is pending are held; those
// that must get through (or the run or compaction could wait forever) are
// not.
func TestHoldable(t *testing.T) {
	held := []core.Command{core.OpenSession{}, core.ChangeConfig{}, core.CloseSession{}, core.StartRun{},
		core.AppendContext{}, core.RemoveContext{}, core.RequestCompaction{}}
	never := []core.Command{core.Steer{}, core.CancelRun{}, core.FailRun{}, core.GenerationResult{}, core.ToolResult{},
		core.CompactionResult{}, core.TranscriptionResult{}}
	for _, c := range held {
		if !runtime.Holdable(c) {
			t.Errorf("%T is not held while a compaction is pending", c)
		}
	}
	for _, c := range never {
		if runtime.Holdable(c) {
			t.Errorf("%T is held while a compaction is pending", c)
		}
	}
}
