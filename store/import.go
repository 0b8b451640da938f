package store

import (
	"context"
	"fmt"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// Importer creates sessions and workspaces whose histories come from
// elsewhere (an archive), all in one transaction: when any part fails,
// none of them exists.
type Importer interface {
	// Import records b's snapshots, creates its workspaces, then its
	// sessions in order. Each session gets its events with the seqs they
	// had (from 1, or from a fork's point + 1), its roots, and its lineage,
	// and its lifecycle projection from those events. A taken id is
	// ErrSessionExists and a taken workspace name ErrWorkspaceExists; a ref
	// or head to an absent blob is a *blob.MissingError; an invalid
	// session or event matches ErrInvalidAppend or ErrInvalidFork.
	Import(ctx context.Context, b ImportBatch) error
}

// ImportBatch is what one Import creates.
type ImportBatch struct {
	// Snapshots are recorded; one recorded already stays as it is.
	Snapshots []content.Digest
	// Workspaces are created at revision 1 with their Head (their other
	// fields are the store's to set).
	Workspaces []Workspace
	Sessions   []ImportedSession
}

// ImportedSession is one session of an Import.
type ImportedSession struct {
	SessionID string
	// Fork, when set, makes the session a history fork (Fork.SessionID is
	// SessionID); its source may be an earlier session of the same import.
	Fork *ForkRequest
	// CloneOf records the session as a configuration-only clone of that
	// session, an earlier one of the import or one the store has.
	CloneOf string
	// Events yields the session's events as proposals, in order, a chunk
	// at a time; Import calls it once and stops at its first error.
	Events func(yield func([]core.Proposal) error) error
}

// PrepareImportBatch checks b's snapshots and workspaces the same way in
// every backend, and returns b's workspaces as an import creates them: at
// revision 1, created and updated at atMs.
func PrepareImportBatch(b ImportBatch, atMs int64) ([]Workspace, error) {
	for _, d := range b.Snapshots {
		if err := PrepareSnapshot(d); err != nil {
			return nil, err
		}
	}
	out := make([]Workspace, len(b.Workspaces))
	for i, w := range b.Workspaces {
		if err := PrepareWorkspace(w.Name, w.Head); err != nil {
			return nil, err
		}
		out[i] = Workspace{Name: w.Name, Revision: 1, Head: w.Head, CreatedAtMs: atMs, UpdatedAtMs: atMs}
	}
	return out, nil
}

// PrepareImport checks what every backend checks before an import.
func PrepareImport(s ImportedSession) error {
	if err := ValidateSessionID(s.SessionID); err != nil {
		return err
	}
	if s.Fork != nil {
		if s.Fork.SessionID != s.SessionID {
			return fmt.Errorf("%w: import of %s with a fork request for %s", ErrInvalidFork, s.SessionID, s.Fork.SessionID)
		}
		if err := PrepareFork(*s.Fork); err != nil {
			return err
		}
	}
	if s.CloneOf == s.SessionID {
		return fmt.Errorf("%w: session %s cannot be a clone of itself", ErrInvalidFork, s.SessionID)
	}
	return nil
}

// importStart is where an imported session's own events start, and the
// lifecycle they are projected onto.
func importStart(s ImportedSession) (int64, core.Lifecycle) {
	if s.Fork != nil {
		return s.Fork.AtSeq, ForkProjection(*s.Fork)
	}
	return 0, core.Lifecycle{SessionID: s.SessionID}
}

// ImportedEvents runs s.Events, checking each chunk as Append would and
// committing it after head; commit gets the chunk's events and its refs.
// It returns the session's head and projection after the last chunk.
func ImportedEvents(s ImportedSession, commit func(events []core.Event, refs []content.Digest) error) (int64, core.Lifecycle, error) {
	head, life := importStart(s)
	err := s.Events(func(ps []core.Proposal) error {
		if len(ps) == 0 {
			return nil
		}
		refs, err := PrepareAppend(s.SessionID, head, ps)
		if err != nil {
			return err
		}
		events := Commit(head, ps)
		if err := commit(events, refs); err != nil {
			return err
		}
		life = Project(life, s.SessionID, events)
		head = events[len(events)-1].Seq
		return nil
	})
	if err == nil && head == 0 {
		err = fmt.Errorf("%w: imported session %s has no events", ErrInvalidAppend, s.SessionID)
	}
	return head, life, err
}
