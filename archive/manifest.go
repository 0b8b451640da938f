// Package archive is Cairn's session archive: one zstd-compressed tar
// stream holding a manifest, the blobs the selected sessions and
// workspaces reach, and each session's events in order. docs/archive.md
// describes the format; this package writes it and reads it as untrusted
// input, bounded and verified entry by entry.
package archive

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// Format names the format in every manifest.
const Format = "cairn-archive"

// The version this package writes. A reader takes any minor version of its
// own major (a minor version only adds fields a reader may ignore) and
// refuses a newer major one.
const (
	Major = 1
	Minor = 0
)

// MaxHead bounds a session's head in a manifest, so the entry count it
// implies cannot overflow.
const MaxHead = 1 << 40

// Version is the version string this package writes.
var Version = strconv.Itoa(Major) + "." + strconv.Itoa(Minor)

// Manifest is the archive's first entry: what it holds.
type Manifest struct {
	Format      string `json:"format"`
	Version     string `json:"version"`
	CreatedAtMs int64  `json:"createdAtMs"`
	// Sessions in the order their events follow; a history fork comes
	// after the session it forks.
	Sessions   []Session   `json:"sessions"`
	Workspaces []Workspace `json:"workspaces"`
	// Blobs are every blob the sessions and workspaces reach, sorted. The
	// archive holds an entry for each, unless a reader's target already
	// has it (an import sends only the missing ones).
	Blobs []content.Digest `json:"blobs"`
	// Edges are the retention edges among Blobs: a parent's format names
	// its children (snapshot manifests, reports, lists).
	Edges []Edge `json:"edges"`
	// Snapshots are the snapshot manifests the sessions' links pin; an
	// import records each as a snapshot.
	Snapshots []content.Digest `json:"snapshots"`
}

// Session is one session's place in the archive.
type Session struct {
	ID string `json:"id"`
	// Head is the seq of the last event the archive holds.
	Head int64 `json:"head"`
	// ForkOf is the session's lineage when its source is in the archive
	// too: its events entry then holds only seqs after ForkOf.AtSeq. A
	// fork exported without its source is an ordinary session here, with
	// its inherited prefix.
	ForkOf *store.Source `json:"forkOf,omitempty"`
	// CloneOf names the session it was cloned from, when that is in the
	// archive too.
	CloneOf string `json:"cloneOf,omitempty"`
	// Title, CreatedAtMs, Model and Tools describe the session for a
	// person reading the manifest; the events are authoritative.
	Title       string              `json:"title,omitempty"`
	CreatedAtMs int64               `json:"createdAtMs"`
	Model       core.ModelSelection `json:"model"`
	Tools       []string            `json:"tools,omitempty"`
}

// Empty reports whether the archive holds no event of the session: a
// fork with lineage that has none of its own yet.
func (s Session) Empty() bool { return s.Head == s.First()-1 }

// First is the seq of the session's first event in the archive.
func (s Session) First() int64 {
	if s.ForkOf != nil {
		return s.ForkOf.AtSeq + 1
	}
	return 1
}

// Workspace is a workspace at its head.
type Workspace struct {
	Name string         `json:"name"`
	Head content.Digest `json:"head"`
}

// Edge is one parent blob and the children its format names.
type Edge struct {
	Parent   content.Digest   `json:"parent"`
	Children []content.Digest `json:"children"`
}

// checkVersion refuses another format and a newer major version.
func (m *Manifest) checkVersion() error {
	if m.Format != Format {
		return invalid(ManifestName, fmt.Sprintf("format is %q, not %q", m.Format, Format))
	}
	major, _, ok := strings.Cut(m.Version, ".")
	n, err := strconv.Atoi(major)
	if !ok || err != nil || n < 1 {
		return invalid(ManifestName, fmt.Sprintf("version %q is not MAJOR.MINOR", m.Version))
	}
	if n > Major {
		return &Error{Kind: KindVersion, Entry: ManifestName, Message: fmt.Sprintf(
			"the archive is format version %s; this cairn reads major version %d and older: upgrade cairn to import it", m.Version, Major)}
	}
	return nil
}

// validate checks everything a manifest says about itself: ids, names and
// digests well formed and unique, lineage pointing at earlier sessions,
// and every digest it names among its blobs.
func (m *Manifest) validate() error {
	if err := m.checkVersion(); err != nil {
		return err
	}
	bad := func(format string, a ...any) error { return invalid(ManifestName, fmt.Sprintf(format, a...)) }
	if !slices.IsSortedFunc(m.Blobs, compareDigests) {
		return bad("blobs are not sorted")
	}
	if len(slices.Compact(slices.Clone(m.Blobs))) != len(m.Blobs) {
		return bad("blobs repeat a digest")
	}
	for _, d := range m.Blobs {
		if d.IsZero() {
			return bad("a blob digest is zero")
		}
	}
	heads := map[string]int64{}
	for i, s := range m.Sessions {
		if err := store.ValidateSessionID(s.ID); err != nil {
			return bad("session %d: %v", i, err)
		}
		if _, dup := heads[s.ID]; dup {
			return bad("session %s appears twice", s.ID)
		}
		if s.ForkOf != nil {
			srcHead, ok := heads[s.ForkOf.SessionID]
			if !ok {
				return bad("session %s forks %s, which does not come before it", s.ID, s.ForkOf.SessionID)
			}
			if s.ForkOf.AtSeq < 1 || s.ForkOf.AtSeq > srcHead {
				return bad("session %s forks %s at %d, outside its events 1..%d", s.ID, s.ForkOf.SessionID, s.ForkOf.AtSeq, srcHead)
			}
		}
		if s.CloneOf != "" {
			if _, ok := heads[s.CloneOf]; !ok {
				return bad("session %s is a clone of %s, which does not come before it", s.ID, s.CloneOf)
			}
		}
		if s.Head > MaxHead {
			return bad("session %s has head %d, over %d", s.ID, s.Head, int64(MaxHead))
		}
		if s.Head < s.First()-1 || s.Head < 1 {
			return bad("session %s has head %d, before its first event %d", s.ID, s.Head, s.First())
		}
		heads[s.ID] = s.Head
	}
	names := map[string]bool{}
	for _, w := range m.Workspaces {
		if err := store.ValidateWorkspaceName(w.Name); err != nil {
			return bad("%v", err)
		}
		if names[w.Name] {
			return bad("workspace %s appears twice", w.Name)
		}
		names[w.Name] = true
		if !m.Holds(w.Head) {
			return bad("workspace %s: head %s is not among the blobs", w.Name, w.Head)
		}
	}
	for _, e := range m.Edges {
		for _, d := range append([]content.Digest{e.Parent}, e.Children...) {
			if !m.Holds(d) {
				return bad("edge of %s: %s is not among the blobs", e.Parent, d)
			}
		}
	}
	for _, d := range m.Snapshots {
		if !m.Holds(d) {
			return bad("snapshot %s is not among the blobs", d)
		}
	}
	return nil
}

func compareDigests(a, b content.Digest) int { return bytes.Compare(a[:], b[:]) }

// Holds reports whether d is among the manifest's blobs.
func (m *Manifest) Holds(d content.Digest) bool {
	_, ok := slices.BinarySearchFunc(m.Blobs, d, compareDigests)
	return ok
}
