package runtime

import (
	"context"
	"errors"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// LoadSummary returns the summary (core.Summary) of a session that has no
// unfinished work, read from its latest checkpoint's head and the events
// after it: at a restart, a read of a 10,000-turn session decodes the
// checkpoint's small index and at most a checkpoint interval of events,
// not its 20,000 entries. ok is false when that does not hold (unfinished
// work, whose runs the summary does not carry; no checkpoint, or one that
// is unreadable, of another session, past the head, or that the tail does
// not apply to): the caller then loads the state (LoadState), which tells
// such cases apart. Errors are only the log's own.
func LoadSummary(ctx context.Context, log store.SessionLog, cps store.Checkpoints, blobs blob.Store, sessionID string) (core.Summary, bool, error) {
	if cps == nil {
		return core.Summary{}, false, nil
	}
	seq, d, err := cps.LatestCheckpoint(ctx, sessionID, 0)
	if err != nil {
		return core.Summary{}, false, ctx.Err()
	}
	life, err := log.Session(ctx, sessionID)
	if err != nil {
		return core.Summary{}, false, err
	}
	if life.Unfinished() || seq > life.Head {
		return core.Summary{}, false, nil
	}
	data, err := blobs.Get(ctx, d)
	if err != nil {
		return core.Summary{}, false, ctx.Err()
	}
	sum, err := core.CheckpointSummary(data)
	if err != nil || sum.Head != seq || sum.SessionID != sessionID {
		return core.Summary{}, false, nil
	}
	_, err = readTail(ctx, log, sessionID, &sum.Head, sum.Apply, life.Head)
	var corrupt *core.CorruptError
	if errors.As(err, &corrupt) {
		return core.Summary{}, false, nil
	}
	if err != nil {
		return core.Summary{}, false, err
	}
	return sum, true, nil
}
