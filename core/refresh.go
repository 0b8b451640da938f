package core

import "strings"

// Keys of the context the runtime derives from a session's linked files at
// the refresh boundary. Only the runtime may write them.
const (
	// DerivedInstructionKeyPrefix + mount keys the instructions assembled
	// from one link's prompt files ("instructions.vfs:/work").
	DerivedInstructionKeyPrefix = InstructionKeyPrefix + "vfs:"
	// SkillCatalogKey keys the catalog of skills found in linked files.
	SkillCatalogKey = CatalogKeyPrefix + "skills"
	// AgentMenuKey keys the menu of agent profiles the session may start.
	AgentMenuKey = CatalogKeyPrefix + "agents"
)

// RefreshManaged reports whether key is derived from linked files, so that
// a refresh owns it: it writes it, replaces it and removes it.
func RefreshManaged(key string) bool {
	return strings.HasPrefix(key, DerivedInstructionKeyPrefix) || key == SkillCatalogKey || key == AgentMenuKey
}

// AtRefreshBoundary reports whether the session is where the spec puts the
// refresh of linked-file material: open, with no run active or queued, about
// to admit new run work. Queued work runs on the context it was queued
// against, so a session with work is never refreshed in front of it.
func (s *State) AtRefreshBoundary() bool {
	return s.Opened && !s.Closed && !s.HasWork()
}

// RefreshEdits compares what a refresh derived from the linked files with the
// active context and returns the commands that bring the context in line: an
// append of every derived entry whose content changed (a changed catalog goes
// to the tail, superseding its earlier version; instructions replace theirs),
// and a removal of managed keys no longer derived. Unchanged material yields
// no command at all, so an idle refresh writes nothing and the next request
// keeps its prefix. Derived entries with unmanaged keys are ignored.
func RefreshEdits(s *State, derived []EntryInput, at int64) []Command {
	var add []EntryInput
	want := map[string]bool{}
	for _, in := range derived {
		if !RefreshManaged(in.Key) || want[in.Key] {
			continue
		}
		want[in.Key] = true
		if cur, ok := s.EntryByKey(in.Key); ok && cur.Kind == in.Kind && cur.Content == in.Content {
			continue
		}
		add = append(add, in)
	}
	var gone []string
	for i, left := 0, s.managed; left > 0; i++ { // most contexts hold few, or none
		if e := &s.entries[i]; RefreshManaged(e.Key) {
			left--
			if !want[e.Key] && !contains(gone, e.Key) {
				gone = append(gone, e.Key)
			}
		}
	}
	var cmds []Command
	if len(add) > 0 {
		cmds = append(cmds, AppendContext{AtMs: at, Entries: add, Source: SourceRuntime})
	}
	if len(gone) > 0 {
		cmds = append(cmds, RemoveContext{AtMs: at, Keys: gone})
	}
	return cmds
}
