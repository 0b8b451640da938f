package runtime

import (
	"context"
	"errors"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// ErrNoCatalog is returned by a host's ForkSession and DeleteSession when
// its log cannot fork or delete sessions (it does not implement
// store.Catalog).
var ErrNoCatalog = errors.New("this store cannot fork or delete sessions")

// ForkCheckpoint records at, the source's state at the fork point, as the
// fork's checkpoint at req.AtSeq, so loading the fork costs the same
// whatever the source's length. It does nothing without a checkpoint store
// or a state, or for a state at another seq.
func ForkCheckpoint(ctx context.Context, cps store.Checkpoints, blobs blob.Store, req store.ForkRequest, at *core.State) error {
	if cps == nil || at == nil || at.Head != req.AtSeq {
		return nil
	}
	at.SessionID = req.SessionID
	return WriteCheckpoint(ctx, cps, blobs, at)
}
