package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// ErrNoCatalog is returned by a host's ForkSession and DeleteSession when
// its log cannot fork or delete sessions (it does not implement
// store.Catalog).
var ErrNoCatalog = errors.New("this store cannot fork or delete sessions")

// SessionExists is the rejection of a new session (or fork) whose id is
// taken.
func SessionExists(id string) *core.Rejection {
	return &core.Rejection{Kind: core.RejectSessionExists, Message: fmt.Sprintf("session %s already exists", id)}
}

// ForkSession creates a history fork in log: req.SessionID (empty: a fresh
// id from newID) inherits req.Source's events 1..req.AtSeq, read through the
// source. at, when set, is the source's state at the fork point; it is
// recorded as the fork's first checkpoint (forkCheckpoint). After this the
// fork is an ordinary session, which its host loads from its log on first
// use. Both hosts fork through here; what they do after (start a workflow)
// is theirs.
func ForkSession(ctx context.Context, log store.SessionLog, cps store.Checkpoints, blobs blob.Store, req store.ForkRequest, at *core.State,
	newID func(prefix string) string, logger *slog.Logger) (core.Lifecycle, error) {
	cat, ok := log.(store.Catalog)
	if !ok {
		return core.Lifecycle{}, ErrNoCatalog
	}
	var err error
	if req.SessionID, err = SessionIDOrNew(req.SessionID, newID); err != nil {
		return core.Lifecycle{}, err
	}
	life, err := cat.Fork(ctx, req)
	if errors.Is(err, store.ErrSessionExists) {
		return core.Lifecycle{}, SessionExists(req.SessionID)
	}
	if err != nil {
		return core.Lifecycle{}, err
	}
	if err := forkCheckpoint(ctx, cps, blobs, req, at); err != nil {
		// The log is authoritative: the fork loads by replay instead.
		logger.Warn("writing a fork's first checkpoint failed; the fork loads by replaying its log", "session", req.SessionID, "err", err)
	}
	return life, nil
}

// forkCheckpoint records at, the source's state at the fork point, as the
// fork's checkpoint at req.AtSeq, so loading the fork costs the same
// whatever the source's length. It does nothing without a checkpoint store
// or a state, or for a state at another seq.
func forkCheckpoint(ctx context.Context, cps store.Checkpoints, blobs blob.Store, req store.ForkRequest, at *core.State) error {
	if cps == nil || at == nil || at.Head != req.AtSeq {
		return nil
	}
	at.SessionID = req.SessionID
	return WriteCheckpoint(ctx, cps, blobs, at)
}

// DeleteSession deletes a closed session (with cascade, the closed tree of
// its history forks) from log and returns the deleted ids; the host then
// forgets what it holds of them. The store enforces the rules (closed, no
// open forks).
func DeleteSession(ctx context.Context, log store.SessionLog, sessionID string, cascade bool) ([]string, error) {
	cat, ok := log.(store.Catalog)
	if !ok {
		return nil, ErrNoCatalog
	}
	return cat.DeleteSession(ctx, sessionID, cascade)
}
