package api

import (
	"context"
	"errors"

	"github.com/cairn-agents/cairn/core"
)

// staged are the bytes of text a command names but that are not stored yet.
type staged [][]byte

// submitStaged submits cmd, storing its staged texts only once the command
// is admissible: a StagingHost stores them with the command's admission;
// otherwise the core decides it first against the session's state (a pure
// dry run). Either way a call the session refuses (closed, a stale
// revision, a duplicate with other input, …) stores nothing. A compaction
// in progress is no refusal here: the host holds the command until it ends.
func (s call) submitStaged(ctx context.Context, sessionID string, cmd core.Command, texts staged) (core.Admission, error) {
	if sh, ok := s.host.(StagingHost); ok {
		return sh.SubmitWith(ctx, sessionID, cmd, texts)
	}
	if len(texts) > 0 {
		var refused error
		if err := s.host.Inspect(ctx, sessionID, func(st *core.State) { _, refused = core.Admit(st, cmd) }); err != nil {
			return core.Admission{}, err
		}
		var rej *core.Rejection
		if errors.As(refused, &rej) && rej.Kind != core.RejectCompactionPending {
			return core.Admission{}, refused
		}
		for _, t := range texts {
			if _, err := s.host.Blobs().Put(ctx, t); err != nil {
				return core.Admission{}, err
			}
		}
	}
	return s.host.Submit(ctx, sessionID, cmd)
}
