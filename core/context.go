package core

import (
	"fmt"
	"sort"
)

// MaxSupersededCatalogs is how many superseded versions of one catalog key
// stay in context beside the current one.
const MaxSupersededCatalogs = 5

// Context returns the active context in request order: instruction entries
// first, ordered by key; every other entry at its recorded position. The
// slice may be shared with the state and must not be modified: the state
// never changes an entry in place (see copyOnWrite), so what it returned
// stays as it was however the state moves on. When the entries already
// are in request order, as in a session whose instructions came first,
// nothing is copied: a turn does not pay for the length of the session.
func (s *State) Context() []Entry {
	if len(s.entries) == 0 {
		return []Entry{} // never nil: an empty context is a list
	}
	if s.inRequestOrder() {
		return s.entries[:len(s.entries):len(s.entries)]
	}
	out := make([]Entry, 0, len(s.entries))
	s.eachInContext(func(e *Entry) { out = append(out, *e) })
	return out
}

// inRequestOrder reports whether s.entries is its own request order: its
// instruction entries come first, ordered by key.
func (s *State) inRequestOrder() bool {
	n := 0
	for n < len(s.entries) && s.entries[n].Kind == EntryInstructions {
		if n > 0 && s.entries[n].Key < s.entries[n-1].Key {
			return false
		}
		n++
	}
	return n == s.instructions // none after the leading ones
}

// recount counts the entries again after they were rebuilt (see
// State.instructions).
func (s *State) recount() {
	s.instructions, s.runScoped, s.managed = 0, 0, 0
	for i := range s.entries {
		s.count(&s.entries[i], 1)
	}
}

// count adds d (1 or -1) to the counts e is in.
func (s *State) count(e *Entry, d int) {
	if e.Kind == EntryInstructions {
		s.instructions += d
	}
	if e.Scope == ScopeRun {
		s.runScoped += d
	}
	if RefreshManaged(e.Key) {
		s.managed += d
	}
}

// copyOnWrite gives the state its own copy of its entries before one is
// changed or dropped in place, so a slice Context returned keeps what it
// held. Appending needs no copy: it writes past the end of every slice
// handed out.
func (s *State) copyOnWrite() { s.entries = append([]Entry(nil), s.entries...) }

// eachInContext calls fn with each active entry in request order (see
// Context), without copying the context.
func (s *State) eachInContext(fn func(*Entry)) {
	var instr []int
	for i := range s.entries {
		if s.entries[i].Kind == EntryInstructions {
			instr = append(instr, i)
		}
	}
	sort.SliceStable(instr, func(a, b int) bool { return s.entries[instr[a]].Key < s.entries[instr[b]].Key })
	for _, i := range instr {
		fn(&s.entries[i])
	}
	for i := range s.entries {
		if s.entries[i].Kind != EntryInstructions {
			fn(&s.entries[i])
		}
	}
}

// EntryCount is the number of active entries.
func (s *State) EntryCount() int { return len(s.entries) }

// EntryByKey returns the current (non-superseded) entry with key, if any.
func (s *State) EntryByKey(key string) (Entry, bool) {
	for i := len(s.entries) - 1; i >= 0; i-- {
		if s.entries[i].Key == key && !s.superseded(s.entries[i].ID) {
			return s.entries[i], true
		}
	}
	return Entry{}, false
}

// EntryByID returns the active entry with id, if any.
func (s *State) EntryByID(id string) (Entry, bool) {
	for _, e := range s.entries {
		if e.ID == id {
			return e, true
		}
	}
	return Entry{}, false
}

func (s *State) superseded(id string) bool {
	for _, e := range s.entries {
		if e.Supersedes == id {
			return true
		}
	}
	return false
}

// applyEntries adds entries. A keyed catalog is appended and supersedes the
// current version, which stays in place byte-identical (bounded history);
// any other keyed entry replaces the current one in place.
func (s *State) applyEntries(entries []Entry) error {
	for _, e := range entries {
		if e.ID == "" {
			return fmt.Errorf("entry without id")
		}
		if _, dup := s.entryIDs[e.ID]; dup {
			return fmt.Errorf("duplicate entry id %s", e.ID)
		}
		s.nextEntry++
		s.entryIDs[e.ID] = struct{}{}
		if e.Key != "" && e.Kind != EntryCatalog {
			if i := s.indexOfKey(e.Key); i >= 0 {
				delete(s.entryIDs, s.entries[i].ID)
				s.copyOnWrite()
				s.count(&s.entries[i], -1)
				s.count(&e, 1)
				s.entries[i] = e
				continue
			}
		}
		if e.Kind == EntryInstructions && s.inRequestOrder() {
			s.insertInstructions(e)
		} else {
			s.entries = append(s.entries, e)
		}
		s.count(&e, 1)
		if e.Kind == EntryCatalog && e.Key != "" {
			s.trimSuperseded(e.Key)
		}
	}
	return nil
}

// insertInstructions puts a new instruction entry among the leading ones,
// in key order, in a new slice (see copyOnWrite), so that entries stay in
// request order and Context hands them over without a copy: appended
// after the conversation, an instruction added mid-session would have cost
// every later turn a copy of the whole context. Context's order is the
// same either way. s must be in request order.
func (s *State) insertInstructions(e Entry) {
	at := 0
	for at < s.instructions && s.entries[at].Key < e.Key {
		at++
	}
	out := make([]Entry, 0, len(s.entries)+1)
	out = append(out, s.entries[:at]...)
	out = append(out, e)
	s.entries = append(out, s.entries[at:]...)
}

// putInRequestOrder reorders the entries to their request order when they
// are not in it, as a state whose instructions were appended after its
// conversation (before insertInstructions) holds them.
func (s *State) putInRequestOrder() {
	if !s.inRequestOrder() {
		s.entries = s.Context() // a copy in request order
	}
}

func (s *State) indexOfKey(key string) int {
	for i, e := range s.entries {
		if e.Key == key {
			return i
		}
	}
	return -1
}

// trimSuperseded drops the oldest superseded versions of a catalog key
// beyond MaxSupersededCatalogs.
func (s *State) trimSuperseded(key string) {
	var versions []int
	for i, e := range s.entries {
		if e.Key == key {
			versions = append(versions, i)
		}
	}
	excess := len(versions) - 1 - MaxSupersededCatalogs
	if excess <= 0 {
		return
	}
	drop := map[int]bool{}
	for _, i := range versions[:excess] {
		drop[i] = true
	}
	s.keepEntries(func(i int, _ Entry) bool { return !drop[i] })
}

func (s *State) removeEntries(ids []string) {
	s.keepEntries(func(_ int, e Entry) bool { return !contains(ids, e.ID) })
}

func (s *State) removeKeys(keys []string) {
	s.keepEntries(func(_ int, e Entry) bool { return e.Key == "" || !contains(keys, e.Key) })
}

// keepEntries keeps the entries for which keep is true, in order, in a
// new slice (see copyOnWrite).
func (s *State) keepEntries(keep func(i int, e Entry) bool) {
	kept := make([]Entry, 0, len(s.entries))
	for i, e := range s.entries {
		if keep(i, e) {
			kept = append(kept, e)
		} else {
			delete(s.entryIDs, e.ID)
		}
	}
	s.entries = kept
	s.recount()
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// EntryID is the id the core gives the n-th entry of a session (1-based).
func EntryID(n int64) string { return fmt.Sprintf("e%d", n) }
