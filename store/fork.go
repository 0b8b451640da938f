package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-agents/cairn/core"
)

// Catalog manages sessions as wholes, beside the append-only SessionLog:
// history forks and configuration-only clones with their lineage, deletion
// of closed sessions, and the newest-first listing. Every backend
// implements it on its log.
//
// A history fork is a session whose effective log is its source's events
// 1..AtSeq followed by its own events from AtSeq+1: ReadAfter, ReadBefore,
// Session and Append of the fork behave exactly as for an ordinary session
// whose log is that line. Nothing is copied: the inherited part is read
// through the source (recursively for a fork of a fork), clamped to the
// fork point, so later appends to the source never show in the fork, and
// creating one costs the same whatever the source's length. The fork's own
// events record its roots; the inherited prefix stays protected by the
// source's, which is why a session with history forks cannot be deleted on
// its own.
type Catalog interface {
	// Fork creates req.SessionID as a history fork of req.Source at
	// req.AtSeq, in one transaction that reads no event. Its head is AtSeq;
	// its lifecycle projection is req.Projection with its own id, head and
	// times (AtMs). The new id must be free (else ErrSessionExists), the
	// source must exist (else ErrSessionNotFound), AtSeq must be within
	// 1..the source's head (else ErrInvalidFork), and the chain of forks
	// must stay within MaxForkDepth (else a *ForkDepthError).
	Fork(ctx context.Context, req ForkRequest) (core.Lifecycle, error)
	// RecordClone records that sessionID, an existing session with no
	// lineage yet, was created as a configuration-only clone of sourceID
	// (Source then has no AtSeq). Nothing is inherited.
	RecordClone(ctx context.Context, sessionID, sourceID string) error
	// Source returns the session's lineage, or nil for a session created
	// from scratch; ErrSessionNotFound for an unknown session.
	Source(ctx context.Context, sessionID string) (*Source, error)
	// DeleteSession deletes a closed session: its events, checkpoints,
	// lineage and roots, in one transaction (the blobs stay, for a
	// collector to reclaim). A session that is not closed is a
	// *NotClosedError; one that history forks inherit from is a
	// *HasForksError unless cascade, which deletes it together with every
	// history fork below it, each of which must be closed too. It returns
	// the deleted ids, the requested one first.
	DeleteSession(ctx context.Context, sessionID string, cascade bool) ([]string, error)
	// SessionsBefore lists sessions newest first: by creation time, then
	// by id, both descending, strictly after the cursor in that order (nil:
	// from the newest), up to limit (<= 0: all).
	SessionsBefore(ctx context.Context, before *SessionCursor, limit int) ([]core.Lifecycle, error)
}

// MaxForkDepth bounds the chain of history forks a session's log is read
// through: a fork of a fork of … a session created from scratch.
const MaxForkDepth = 16

// Source is a session's lineage: the session it was forked or cloned from,
// and for a history fork the seq it forked at.
type Source struct {
	SessionID string `json:"sessionId"`
	// AtSeq is the fork point of a history fork; 0 (absent) for a
	// configuration-only clone.
	AtSeq int64 `json:"atSeq,omitempty"`
}

// ForkRequest asks for a history fork.
type ForkRequest struct {
	SessionID string // the new session
	Source    string // the session it forks
	AtSeq     int64  // the fork point: the new session inherits events 1..AtSeq
	AtMs      int64  // creation time: the fork's created and updated times
	// Projection is the source's lifecycle projection as of AtSeq (see
	// ProjectionOf); the store keeps it as the fork's, with the fork's own
	// id, head and times.
	Projection core.Lifecycle
}

// ProjectionOf returns the lifecycle projection that a log whose reducer
// state is st has, apart from its id and times: what a fork at st.Head
// starts from.
func ProjectionOf(st *core.State) core.Lifecycle {
	l := core.Lifecycle{Model: st.Config.Model, Head: st.Head, ActiveRunID: st.Active, QueuedRuns: len(st.Queue),
		CompactionPending: st.Compaction != nil}
	if st.Opened {
		l.Status = core.SessionStatusOpen
	}
	if st.Closed {
		l.Status = core.SessionStatusClosed
	}
	if runs := st.Runs(); len(runs) > 0 {
		last := runs[len(runs)-1]
		l.LastRunID, l.LastRunStatus = last.ID, last.Status
	}
	return l
}

// Errors of the Catalog.
var (
	// ErrSessionExists: a fork (or clone) was asked for under an id in use.
	ErrSessionExists = errors.New("session already exists")
	// ErrInvalidFork is matched by errors for fork requests no backend
	// accepts: a bad id, a fork of itself, a fork point outside 1..head.
	ErrInvalidFork = errors.New("invalid fork")
	// ErrForkTooDeep is matched by *ForkDepthError.
	ErrForkTooDeep = errors.New("fork chain too deep")
	// ErrSessionNotClosed is matched by *NotClosedError.
	ErrSessionNotClosed = errors.New("session is not closed")
	// ErrSessionHasForks is matched by *HasForksError.
	ErrSessionHasForks = errors.New("session has history forks")
)

// ForkDepthError says a fork would be read through more than MaxForkDepth
// sessions.
type ForkDepthError struct {
	Source string // the session that was to be forked
	Depth  int    // the depth the fork would have had
	Max    int
}

func (e *ForkDepthError) Error() string {
	return fmt.Sprintf("a fork of %s would be fork %d deep; at most %d forks of forks are allowed", e.Source, e.Depth, e.Max)
}
func (e *ForkDepthError) Unwrap() error { return ErrForkTooDeep }

// NotClosedError says a deletion found a session that is not closed.
type NotClosedError struct {
	SessionID string
	Status    string
}

func (e *NotClosedError) Error() string {
	return fmt.Sprintf("session %s is %s; only closed sessions can be deleted", e.SessionID, orUnknown(e.Status))
}
func (e *NotClosedError) Unwrap() error { return ErrSessionNotClosed }

// HasForksError says a session cannot be deleted on its own because history
// forks inherit its events.
type HasForksError struct {
	SessionID string
	Forks     []string // its direct history forks, sorted
}

func (e *HasForksError) Error() string {
	return fmt.Sprintf("session %s has history forks (%s) that inherit its events; delete them first or delete the whole tree with cascade",
		e.SessionID, strings.Join(e.Forks, ", "))
}
func (e *HasForksError) Unwrap() error { return ErrSessionHasForks }

func orUnknown(status string) string {
	if status == "" {
		return "not opened"
	}
	return status
}

// PrepareFork checks a fork request the same way in every backend; the
// source's existence, head and depth are checked by each backend.
func PrepareFork(req ForkRequest) error {
	if err := ValidateSessionID(req.SessionID); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidFork, err)
	}
	if err := ValidateSessionID(req.Source); err != nil {
		return fmt.Errorf("%w: source: %v", ErrInvalidFork, err)
	}
	if req.SessionID == req.Source {
		return fmt.Errorf("%w: session %s cannot fork itself", ErrInvalidFork, req.Source)
	}
	if req.AtSeq < 1 {
		return fmt.Errorf("%w: fork point %d of %s: forks start after seq 1 at the earliest", ErrInvalidFork, req.AtSeq, req.Source)
	}
	return nil
}

// ForkPointPastHead is the error for a fork point beyond the source's head.
func ForkPointPastHead(source string, atSeq, head int64) error {
	return fmt.Errorf("%w: fork point %d is past the head %d of %s", ErrInvalidFork, atSeq, head, source)
}

// ForkProjection is the lifecycle a fork starts with.
func ForkProjection(req ForkRequest) core.Lifecycle {
	l := req.Projection
	l.SessionID, l.Head, l.CreatedAtMs, l.UpdatedAtMs = req.SessionID, req.AtSeq, req.AtMs, req.AtMs
	l.ForkOf = core.ForkPoint{SessionID: req.Source, AtSeq: req.AtSeq}
	return l
}

// Segment is part of a fork's effective log stored under another session:
// Owner's events with seqs in (From, To].
type Segment struct {
	Owner string `json:"owner"`
	From  int64  `json:"from"`
	To    int64  `json:"to"`
}

// Layout says where a session's effective log is stored: the inherited
// segments, in seq order and contiguous from seq 1, then the session's own
// events, whose seqs are all above ForkAt. An ordinary session has no
// segments and ForkAt 0.
type Layout struct {
	Inherited []Segment
	ForkAt    int64
	// Depth is how many forks deep the session is (0: not a fork).
	Depth int
}

// ForkLayout returns the layout of a fork of source, whose layout is src,
// at atSeq: source's effective log clamped to atSeq, then the fork's own
// events. The depth limit is checked by the caller.
func ForkLayout(source string, src Layout, atSeq int64) Layout {
	var segs []Segment
	for _, sg := range src.Inherited {
		if sg.From >= atSeq {
			break
		}
		sg.To = min(sg.To, atSeq)
		segs = append(segs, sg)
	}
	if src.ForkAt < atSeq {
		segs = append(segs, Segment{Owner: source, From: src.ForkAt, To: atSeq})
	}
	return Layout{Inherited: segs, ForkAt: atSeq, Depth: src.Depth + 1}
}

// CheckForkDepth is the depth check of a fork of source, whose layout is src.
func CheckForkDepth(source string, src Layout) error {
	if d := src.Depth + 1; d > MaxForkDepth {
		return &ForkDepthError{Source: source, Depth: d, Max: MaxForkDepth}
	}
	return nil
}

// RangeReader reads the stored events of owner with seqs in (from, to] (to
// < 0: no upper bound), ascending or, with desc, descending, at most limit
// of them (<= 0: all).
type RangeReader func(ctx context.Context, owner string, from, to int64, limit int, desc bool) ([]core.Event, error)

// ReadAfter reads the effective log of own, laid out as l: up to limit
// events with seq > after, in order.
func (l Layout) ReadAfter(ctx context.Context, own string, after int64, limit int, read RangeReader) ([]core.Event, error) {
	out := []core.Event{}
	left := func() int {
		if limit <= 0 {
			return 0
		}
		return limit - len(out)
	}
	for _, sg := range l.Inherited {
		if sg.To <= after {
			continue
		}
		evs, err := read(ctx, sg.Owner, max(sg.From, after), sg.To, left(), false)
		if err != nil {
			return nil, err
		}
		out = append(out, evs...)
		if limit > 0 && len(out) >= limit {
			return out, nil
		}
	}
	evs, err := read(ctx, own, max(l.ForkAt, after), -1, left(), false)
	if err != nil {
		return nil, err
	}
	return append(out, evs...), nil
}

// ReadBefore reads the effective log of own, laid out as l: up to limit
// events with seq < before, the latest ones, in chronological order.
func (l Layout) ReadBefore(ctx context.Context, own string, before int64, limit int, read RangeReader) ([]core.Event, error) {
	out := []core.Event{} // newest first until the end
	left := func() int {
		if limit <= 0 {
			return 0
		}
		return limit - len(out)
	}
	top := before - 1 // the highest seq wanted
	if top > l.ForkAt {
		evs, err := read(ctx, own, l.ForkAt, top, left(), true)
		if err != nil {
			return nil, err
		}
		out = append(out, evs...)
	}
	for i := len(l.Inherited) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		sg := l.Inherited[i]
		if sg.From >= top {
			continue
		}
		evs, err := read(ctx, sg.Owner, sg.From, min(sg.To, top), left(), true)
		if err != nil {
			return nil, err
		}
		out = append(out, evs...)
	}
	slices.Reverse(out)
	return out, nil
}

// SessionCursor is a position in the newest-first listing of sessions.
type SessionCursor struct {
	CreatedAtMs int64
	SessionID   string
}

// CursorOf is the cursor just past l in the newest-first listing.
func CursorOf(l core.Lifecycle) SessionCursor {
	return SessionCursor{CreatedAtMs: l.CreatedAtMs, SessionID: l.SessionID}
}

// String is the cursor's opaque text form: "<createdAtMs>:<sessionId>".
func (c SessionCursor) String() string {
	return strconv.FormatInt(c.CreatedAtMs, 10) + ":" + c.SessionID
}

// ParseSessionCursor parses SessionCursor.String.
func ParseSessionCursor(s string) (SessionCursor, error) {
	ms, id, ok := strings.Cut(s, ":")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || id == "" {
		return SessionCursor{}, fmt.Errorf("invalid session cursor %q", s)
	}
	return SessionCursor{CreatedAtMs: n, SessionID: id}, nil
}

// Before reports whether l comes after the cursor in the newest-first
// listing (strictly older, or as old with a smaller id).
func (c SessionCursor) Before(l core.Lifecycle) bool {
	return l.CreatedAtMs < c.CreatedAtMs || l.CreatedAtMs == c.CreatedAtMs && l.SessionID < c.SessionID
}

// NewestFirst orders lifecycles as SessionsBefore lists them.
func NewestFirst(a, b core.Lifecycle) int {
	switch {
	case a.CreatedAtMs != b.CreatedAtMs:
		if a.CreatedAtMs > b.CreatedAtMs {
			return -1
		}
		return 1
	case a.SessionID > b.SessionID:
		return -1
	case a.SessionID < b.SessionID:
		return 1
	}
	return 0
}
