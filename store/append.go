package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// ErrInvalidAppend is matched by errors for Append requests that no backend
// would accept (bad session id, negative head, no proposals, bad payload).
var ErrInvalidAppend = errors.New("invalid append")

// MaxSessionIDLen bounds session ids so every backend can index them.
const MaxSessionIDLen = 256

// ValidateSessionID accepts non-empty UTF-8 ids of at most MaxSessionIDLen
// bytes without NUL.
func ValidateSessionID(id string) error {
	if id == "" || len(id) > MaxSessionIDLen || !validText(id) {
		return fmt.Errorf("%w: session id %q must be 1–%d bytes of UTF-8 without NUL", ErrInvalidAppend, id, MaxSessionIDLen)
	}
	return nil
}

// validText reports whether s can be stored as text by every backend:
// PostgreSQL rejects invalid UTF-8 and NUL in text columns, so the others
// refuse them too rather than accept appends the hosted store cannot hold.
func validText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// PrepareAppend checks an Append request the same way in every backend and
// returns the sorted, de-duplicated union of the refs its proposals declare:
// the digests that must exist and become session roots.
func PrepareAppend(sessionID string, expectedHead int64, proposals []core.Proposal) ([]content.Digest, error) {
	if err := ValidateSessionID(sessionID); err != nil {
		return nil, err
	}
	if expectedHead < 0 {
		return nil, fmt.Errorf("%w: negative expected head %d", ErrInvalidAppend, expectedHead)
	}
	if len(proposals) == 0 {
		return nil, fmt.Errorf("%w: no proposals", ErrInvalidAppend)
	}
	var refs []content.Digest
	for i, p := range proposals {
		if p.Kind == "" {
			return nil, fmt.Errorf("%w: proposal %d has no kind", ErrInvalidAppend, i)
		}
		if !validText(p.Kind) {
			return nil, fmt.Errorf("%w: proposal %d kind %q is not UTF-8 without NUL", ErrInvalidAppend, i, p.Kind)
		}
		for _, j := range p.Joins {
			if !validText(j) {
				return nil, fmt.Errorf("%w: proposal %d (%s) join %q is not UTF-8 without NUL", ErrInvalidAppend, i, p.Kind, j)
			}
		}
		// Payloads are stored byte for byte, so they must already be one JSON value.
		if !json.Valid(p.Payload) {
			return nil, fmt.Errorf("%w: proposal %d (%s) payload is not valid JSON", ErrInvalidAppend, i, p.Kind)
		}
		// The refs are what the payload's format declares (core.NewProposal),
		// never strings found in it: text shaped like a digest is text.
		for _, d := range p.Refs {
			if d.IsZero() {
				return nil, fmt.Errorf("%w: proposal %d (%s) declares a zero ref", ErrInvalidAppend, i, p.Kind)
			}
		}
		refs = append(refs, p.Refs...)
	}
	content.SortDigests(refs)
	return slices.Compact(refs), nil
}

// Commit assigns seqs after head to the proposals. The returned events share
// no memory with the proposals, so callers may keep them.
func Commit(head int64, proposals []core.Proposal) []core.Event {
	out := make([]core.Event, len(proposals))
	for i, p := range proposals {
		out[i] = CloneEvent(p.Committed(head + int64(i) + 1))
	}
	return out
}

// Project folds events into the catalog projection of sessionID. The catalog
// is keyed by the id the events were appended under, whatever a payload says.
func Project(l core.Lifecycle, sessionID string, events []core.Event) core.Lifecycle {
	for _, ev := range events {
		l = core.ProjectLifecycle(l, ev)
	}
	l.SessionID = sessionID
	return l
}

// CloneEvent deep-copies the slices of ev (empty-but-present joins stay present).
func CloneEvent(ev core.Event) core.Event {
	ev.Joins = slices.Clone(ev.Joins)
	ev.Payload = slices.Clone(ev.Payload)
	return ev
}
